"""docs/python.md's in-process agent example runs as written: against `~/src/demo`, from another
directory, with the approval and the one-use grant it shows."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.git.conftest import git_env
from tests.readme import doc_block


@pytest.mark.slow
def test_the_readme_agent_example_commits_once_then_is_denied(git_home, sh, tmp_path):
    example = doc_block("docs/python.md", 'runtime.open_session("agent")', "python").text
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
