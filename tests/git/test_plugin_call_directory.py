"""A directory-confined grant is matched against the directory the call acts on (its `cwd`
argument), the same for every caller; a denial suggests the narrowest grant that would allow
the call, and that grant does allow it."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from tests.git.conftest import git_env
from tests.git.support import call_ok
from tests.harness import MEITH

pytestmark = pytest.mark.anyio


async def test_an_agent_grant_is_matched_against_the_calls_cwd(git_rt, make_repo, tmp_path):
    repo = make_repo("project/repo")
    other = make_repo("other/repo")
    (repo / "n.txt").write_text("n\n")
    (other / "n.txt").write_text("n\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # The program hosting the agent runs elsewhere; the call names the repository.
    agent = git_rt.open_session("agent", cwd=str(elsewhere))
    git_rt.grant(agent, ["writes-files"], cwd_prefix=str(repo))
    await call_ok(git_rt, "git_stage", {"cwd": str(repo), "paths": ["n.txt"]}, caller=agent)
    # A session sitting in the repository gains nothing for a call that acts elsewhere.
    inside = git_rt.open_session("agent", cwd=str(repo))
    git_rt.grant(inside, ["writes-files"], cwd_prefix=str(repo))
    res = await git_rt.call("git_stage", {"cwd": str(other), "paths": ["n.txt"]}, caller=inside)
    assert res.error is not None
    assert res.error.code == "PERMISSION_DENIED"
    assert res.error.details["gate"] == "caller"


def test_the_cli_hint_names_the_calls_directory_and_tool_and_works(
    meith_server, git_home, make_repo, tmp_path
):
    srv = meith_server(env={"HOME": git_env(git_home)["HOME"]}, plugins="git")
    srv.approve("git")
    repo = make_repo("project/repo")
    other = make_repo("other/repo")
    srv.grant("writes-files", cwd=str(repo))
    (other / "n.txt").write_text("n\n")
    # Called from inside the granted repository, acting on another one.
    denied = srv.call("git_stage", {"cwd": str(other), "paths": ["n.txt"]}, cwd=str(repo))
    message = denied["error"]["message"]
    hint = message.split("To allow it, run: ", 1)[1]
    assert hint == (
        "meith grants add --caller cli --capability writes-files --tool git_stage "
        f"--cwd {shlex.quote(str(other))}"
    )
    done = subprocess.run(
        [MEITH, *shlex.split(hint)[1:]],
        env=srv.cli_env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    allowed = srv.call("git_stage", {"cwd": str(other), "paths": ["n.txt"]}, cwd=str(repo))
    assert allowed["ok"], allowed
    # ... and that grant is no wider than the hint said.
    (repo / "m.txt").write_text("m\n")
    again = srv.call("git_unstage", {"cwd": str(other), "paths": ["n.txt"]})
    assert again["error"]["code"] == "PERMISSION_DENIED"


async def test_hints_from_a_runtime_on_its_own_home_point_at_that_home(git_home, tmp_path):
    from meith_core import MeithHome, Runtime
    from meith_plugins_git.plugin import Plugin

    home = MeithHome(tmp_path / "program-home")
    async with Runtime(home, load_plugins=False) as rt:
        rt.load_plugin("git", Plugin)
        res = await rt.call("git_stage", {"cwd": str(tmp_path), "paths": ["x"]}, caller="cli")
        assert res.error is not None
        assert f"MEITH_HOME={Path(home.root)} meith plugins approve git" in res.error.message
