"""The git plugin warns, in `app_health` and `meith plugins`, while the user's git would still
open a bare-repository lookalike (`safe.bareRepository` left at its default)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from meith_plugins_git.runner import Git
from tests.git.conftest import git_env

pytestmark = pytest.mark.anyio

MEITH = str(Path(sys.executable).parent / "meith")


def _check(health: dict) -> dict:
    return next(c for c in health["checks"] if c["name"] == "git.safeBareRepository")


async def test_app_health_warns_until_the_user_sets_safe_bare_repository(git_rt, sh, tmp_path):
    if not Git.locate().at_least(2, 38):
        pytest.skip("git before 2.38 has no safe.bareRepository")
    health = (await git_rt.call("app_health")).content
    check = _check(health)
    assert check["status"] == "warn"
    assert "git config --global safe.bareRepository explicit" in check["message"]
    # Advice, not a failure: the runtime itself is fine.
    assert health["status"] == "ok" or any(
        c["status"] in ("degraded", "error") for c in health["checks"]
    )
    sh(tmp_path, "config", "--global", "safe.bareRepository", "explicit")
    check = _check((await git_rt.call("app_health")).content)
    assert check["status"] == "ok"
    assert check["details"]["value"] == "explicit"


async def test_a_repository_cannot_silence_the_warning(git_rt, make_repo, sh, monkeypatch):
    """Only the user's own configuration counts (git ignores the key in a repository's)."""
    if not Git.locate().at_least(2, 38):
        pytest.skip("git before 2.38 has no safe.bareRepository")
    repo = make_repo("repo")
    sh(repo, "config", "safe.bareRepository", "explicit")
    monkeypatch.chdir(repo)
    assert _check((await git_rt.call("app_health")).content)["status"] == "warn"


@pytest.mark.slow
def test_meith_plugins_shows_the_warning_on_the_git_line(git_home, meith_home, tmp_path):
    env = {**git_env(git_home), "MEITH_HOME": str(meith_home.root), "MEITH_PLUGINS": "git"}

    def listing() -> str:
        done = subprocess.run(
            [MEITH, "plugins"], env=env, capture_output=True, text=True, timeout=60, check=True
        )
        return done.stdout

    out = listing()
    git_block = out[out.index("git  (") :]
    assert "warn:" in git_block
    assert "safe.bareRepository" in git_block
    subprocess.run(
        ["git", "config", "--global", "safe.bareRepository", "explicit"], env=env, check=True
    )
    assert "safe.bareRepository" not in listing()
