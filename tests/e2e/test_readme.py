"""The README's examples stay true: its in-process example runs and prints what it says."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_the_in_process_example_runs_and_audits_its_calls() -> None:
    example = next(block for block in _python_blocks() if "asyncio.run(main())" in block)
    proc = subprocess.run(
        [sys.executable, "-c", example], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("False code=<ErrorCode.VALIDATION_ERROR")
    assert "{'kind': 'progress', 'message': 'greeting', 'fraction': 0.5}" in lines
    assert "hello, ada" in lines
    assert lines[-1] == 'greet allow no privileged capability {"name":"ada"}'


def test_the_quick_start_has_exactly_two_commands() -> None:
    quick = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```sh\n(.*?)```", quick, flags=re.S)
    assert len(commands) == 2
    assert all(len(c.strip().splitlines()) == 1 for c in commands)
    assert "meith serve" in commands[0]
    assert "nox" in commands[1]


def test_the_ci_script_runs_the_readme_test_command() -> None:
    quick = README.read_text().split("## Quick start", 1)[1]
    test_command = re.findall(r"```sh\n(.*?)```", quick, flags=re.S)[1].strip()
    ci = (README.parent / ".ci" / "run").read_text()
    assert test_command in ci
