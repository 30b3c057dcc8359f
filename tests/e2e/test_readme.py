"""The README and the pages its examples moved to stay true: the quick start's two commands,
the in-process example of docs/python.md, the plugin example of docs/plugins.md, and what
`meith ui` prints."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.harness import MEITH, base_env, reap, wait_until
from tests.readme import README, assert_shown, doc_block, readme_block, transcript


@pytest.mark.slow
def test_the_in_process_example_runs_and_audits_its_calls() -> None:
    example = doc_block("docs/python.md", "runtime.register(greet)", "python").text
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
    test_command = readme_block("install.py --dev", "sh").text.strip()
    ci = (README.parent / ".ci" / "run").read_text()
    assert test_command in ci


@pytest.mark.slow
def test_the_plugin_authoring_example_loads_and_confines_writes(tmp_path) -> None:
    source = doc_block("docs/plugins.md", "class Plugin:", "python").text
    driver = f"""
import asyncio
from pathlib import Path
from meith_core import MeithHome, Runtime

async def main():
    work = Path({str(tmp_path)!r})
    inside, outside = work / "inside", work / "outside"
    inside.mkdir()
    outside.mkdir()
    async with Runtime(MeithHome(work / "home"), load_plugins=False) as rt:
        rt.load_plugin("hello", Plugin)
        rt.approve_plugin("hello")
        agent = rt.open_session("agent", cwd=str(inside))
        rt.grant(agent, ["writes-files"], cwd_prefix=str(inside))
        call = lambda cwd, name: rt.call(
            "write_note", {{"cwd": str(cwd), "name": name, "text": "hi"}}, caller=agent
        )
        ok = await call(inside, "a.txt")
        escape = await call(inside, "../outside/b.txt")
        elsewhere = await call(outside, "c.txt")
        leaked = any(outside.iterdir())
        print(ok.content["bytes"], (inside / "a.txt").read_text(), escape.error.code,
              elsewhere.error.code, leaked)

asyncio.run(main())
"""
    proc = subprocess.run(
        [sys.executable, "-c", source + driver], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    # Written inside; a name escaping cwd is refused by resolve_within; a cwd outside the
    # granted directory is refused by the tool's own grant_scope check; nothing leaked.
    assert proc.stdout.split() == ["2", "hi", "TOOL_FAILED", "PERMISSION_DENIED", "False"]


@pytest.mark.slow
def test_meith_ui_prints_what_the_pages_show(tmp_path: Path) -> None:
    """`meith ui` as the pages show it, typed where no browser can be opened (it says so too)."""
    shown = [
        readme_block("meith ui: http", "console"),
        doc_block("docs/console.md", "no browser could be opened", "console"),
    ]
    steps = [step for block in shown for step in transcript(block)]
    assert [step.command for step in steps] == ["meith ui", "meith ui"]
    env = base_env(tmp_path / "home")
    env["PATH"] = str(tmp_path / "no-programs")
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    sockets = Path(tempfile.mkdtemp(prefix="meith-", dir="/tmp"))
    out = tmp_path / "ui.out"
    with out.open("wb") as sink:
        ui = subprocess.Popen(
            [MEITH, "ui", "--socket", str(sockets / "none.sock")],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        assert wait_until(lambda: b"no browser could be opened" in out.read_bytes(), 60)
    finally:
        reap(ui, signal.SIGTERM, 30)
        sockets.rmdir()
    for step in steps:
        assert_shown(step, out.read_text(), str(tmp_path))
