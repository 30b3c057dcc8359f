"""The README's in-process agent example runs as written: against `~/src/demo`, from another
directory, with the approval and the one-use grant it shows."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.git.conftest import git_env

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_agent_example_commits_once_then_is_denied(git_home, sh, tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    example = next(b for b in blocks if 'open_session("agent")' in b and "asyncio.run" in b)
    repo = git_home / "src" / "demo"
    repo.mkdir(parents=True)
    sh(repo, "init", "-q")
    (repo / "a.txt").write_text("a\n")
    sh(repo, "add", "a.txt")
    elsewhere = tmp_path / "program"
    elsewhere.mkdir()
    env = {k: v for k, v in git_env(git_home).items() if not k.startswith("MEITH_")}
    done = subprocess.run(
        [sys.executable, "-c", example],
        cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "True PERMISSION_DENIED"
    assert sh(repo, "log", "--format=%s").splitlines() == ["from an agent"]
