"""Issue 19, attack 4: nothing a confined process plants runs the user's git later.

A confined process (an agent session's dev server or terminal, `starts-process --cwd WS`)
writes git metadata beneath WS: a new repository with `core.fsmonitor`, a `!` alias and a
hook; a `.git` pointer file to a gitdir it made in /dev/shm with `credential.helper`; a bare
lookalike laid out by hand (`HEAD`, `objects/`, `refs/`, `config` with `core.worktree` and
`core.sshCommand`, an `include.path`). Before, the user's next `git status` / `git st` /
`git commit` there ran them. Now they are neutralised when the process exits (and while it
runs), said in the stop result, the audit trail (`planted-git` records) and `app_health`;
a repository made legitimately (`git init`) keeps everything that runs nothing.
Real `meith serve`, real confined processes, real git.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest

from meith_core.client import Client
from tests.core.confine.support import needs_landlock
from tests.harness import wait_until

GIT = shutil.which("git") or "git"

pytestmark = [pytest.mark.kernel, needs_landlock]


def user_git(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The user's own git, later, outside every wall."""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "u",
        "GIT_AUTHOR_EMAIL": "u@example.org",
        "GIT_COMMITTER_NAME": "u",
        "GIT_COMMITTER_EMAIL": "u@example.org",
    }
    return subprocess.run(
        [GIT, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def plant_script(ws: Path, out: Path, shm: str) -> str:
    return textwrap.dedent(
        f"""
        set -e
        cd {ws}
        # A new repository with three ways to run a program.
        git init -q sub
        git -C sub config core.fsmonitor "touch {out}/ran-fsmonitor"
        git -C sub config alias.st "!touch {out}/ran-alias"
        git -C sub config alias.co checkout
        printf '#!/bin/sh\\ntouch {out}/ran-hook\\n' > sub/.git/hooks/pre-commit
        chmod +x sub/.git/hooks/pre-commit
        # A pointer file to a gitdir outside the directory, somewhere it can write.
        git init -q --bare {shm}
        git --git-dir={shm} config core.bare false
        git --git-dir={shm} config credential.helper "!touch {out}/ran-credential"
        mkdir ptr
        echo "gitdir: {shm}" > ptr/.git
        # A bare lookalike, laid out by hand.
        mkdir -p look/objects look/refs/heads
        echo "ref: refs/heads/main" > look/HEAD
        printf '[core]\\n\\tbare = false\\n\\tworktree = {ws}/look\\n' > look/config
        printf '\\tsshCommand = touch {out}/ran-ssh\\n' >> look/config
        printf '[include]\\n\\tpath = {out}/more.cfg\\n' >> look/config
        # What a scaffolder does: a plain repository.
        git init -q scaffold
        # Deep in node_modules, too.
        mkdir -p node_modules/pkg/deep
        git init -q node_modules/pkg/deep/r
        git -C node_modules/pkg/deep/r config core.pager "touch {out}/ran-pager"
        touch {ws}/planted-done
        """
    )


@pytest.fixture
def workspace(tmp_path: Path) -> tuple[Path, Path, Path, str]:
    ws = tmp_path / "ws"
    out = tmp_path / "out"  # outside ws: only the test writes here ... and planted commands
    ws.mkdir()
    out.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    shm = f"/dev/shm/meith-test-{uuid.uuid4().hex[:8]}"
    # A repository the user had before: its own program-valued setting is the user's choice.
    assert user_git(home, ws, "init", "-q", "mine").returncode == 0
    assert user_git(home, ws, "-C", "mine", "config", "core.editor", "vi").returncode == 0
    yield ws, out, home, shm
    shutil.rmtree(shm, ignore_errors=True)


def assert_neutralised(ws: Path, out: Path, home: Path, shm: str) -> None:
    """The user's git runs nothing that was planted; what runs nothing is still there."""
    out.chmod(0o777)
    assert user_git(home, ws / "sub", "status").returncode == 0
    user_git(home, ws / "sub", "st")
    assert user_git(home, ws / "sub", "commit", "-q", "--allow-empty", "-m", "x").returncode == 0
    assert user_git(home, ws / "sub", "co", "-q", "-b", "other").returncode == 0  # kept
    assert user_git(home, ws / "ptr", "status").returncode == 0
    user_git(home, ws / "ptr", "credential", "fill")
    user_git(home, ws / "node_modules/pkg/deep/r", "-p", "log")
    ran = sorted(p.name for p in out.iterdir() if p.name.startswith("ran-"))
    assert ran == [], f"planted programs ran: {ran}"
    look = (ws / "look/config").read_text()
    assert "sshCommand" not in look
    assert "more.cfg" not in look  # the include is gone too
    assert "worktree" in look  # not a program: left as it was
    # The scaffolded repository and the user's own are intact.
    assert user_git(home, ws / "scaffold", "status").returncode == 0
    mine = user_git(home, ws / "mine", "config", "core.editor")
    assert mine.stdout.strip() == "vi"
    assert (ws / "sub/.git/hooks/pre-commit").exists()
    assert not os.access(ws / "sub/.git/hooks/pre-commit", os.X_OK)


@pytest.mark.slow
def test_what_a_confined_dev_server_plants_is_neutralised_when_it_stops(
    meith_server: Any, workspace: tuple[Path, Path, Path, str]
) -> None:
    ws, out, home, shm = workspace
    (ws / "plant.sh").write_text(plant_script(ws, out, shm))
    out.chmod(0o777)
    srv = meith_server(plugins="process")
    srv.approve("process")
    srv.grant("starts-process", caller="agent", cwd=str(ws))
    with Client(srv.socket, caller="agent", label="planter", cwd=str(ws)) as agent:
        dev = agent.call(
            "start_dev_server",
            {"cwd": str(ws), "command": f"sh {ws}/plant.sh > {ws}/plant.log 2>&1; sleep 600"},
        )
        assert dev.ok, dev
        assert dev.content["confinedTo"] == str(ws)
        assert wait_until(lambda: (ws / "planted-done").exists(), 60), _log_of(ws)
        stopped = agent.call("stop_dev_server", {"devServerId": dev.content["id"]})
        assert stopped.ok, stopped
        said = "\n".join(d.message for d in stopped.diagnostics or [])
    assert_neutralised(ws, out, home, shm)
    for expected in (
        "removed core.fsmonitor",
        "removed alias.st",
        "hook pre-commit made non-executable",
        "removed credential.helper",
        "removed core.sshcommand",
        "removed include.path",
        "removed core.pager",
        f"{ws}/scaffold/.git; nothing in it runs programs",
    ):
        assert expected in said, f"{expected!r} not in:\n{said}"
    assert "alias.co" not in said
    assert f"{ws}/mine" not in said  # untouched: it did not change

    # The audit trail has a record of its own kind; app_health shows it.
    records = [
        json.loads(line)
        for path in sorted(srv.home.root.glob("audit*.jsonl*"))
        for line in path.read_text().splitlines()
        if line.strip()
    ]
    planted = [r for r in records if r.get("kind") == "planted-git"]
    assert planted, "no planted-git audit record"
    assert planted[-1]["subject"]["processId"] == dev.content["id"]
    assert planted[-1]["caller"] == "agent"
    assert any("core.fsmonitor" in json.dumps(r["findings"]) for r in planted)
    health = srv.content("app_health")
    check = next(c for c in health["checks"] if c["name"] == "planted-git")
    assert check["status"] == "warn"
    assert check["details"]["neutralised"] >= 4  # sub, the pointer's gitdir, look, deep
    verified = srv.cli("audit", "verify")  # the records are sealed into the chain
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert srv.stop() == 0


def _log_of(ws: Path) -> str:
    try:
        return (ws / "plant.log").read_text()
    except OSError:
        return ""


@pytest.mark.slow
def test_a_long_lived_confined_process_is_scanned_while_it_runs(
    meith_server: Any, workspace: tuple[Path, Path, Path, str]
) -> None:
    ws, out, home, _shm = workspace
    srv = meith_server(plugins="process", env={"MEITH_PLANTED_GIT_SCAN_S": "0.5"})
    srv.approve("process")
    srv.grant("starts-process", caller="agent", cwd=str(ws))
    with Client(srv.socket, caller="agent", label="planter", cwd=str(ws)) as agent:
        term = agent.call("create_terminal", {"cwd": str(ws), "shell": "/bin/sh"})
        assert term.ok, term
        assert term.content["confinedTo"] == str(ws)
        tid = term.content["terminalId"] if "terminalId" in term.content else term.content["id"]
        command = (
            f"git init -q live && git -C live config core.sshCommand 'touch {out}/ran-ssh' "
            f"&& git -C live config diff.evil.textconv 'touch {out}/ran-textconv' "
            f"&& touch {ws}/live-done\r"
        )
        assert agent.call("write_terminal", {"terminalId": tid, "data": command}).ok
        assert wait_until(lambda: (ws / "live-done").exists(), 60)

        def neutralised() -> bool:
            text = (ws / "live/.git/config").read_text()
            return "sshCommand" not in text and "textconv" not in text

        # While the shell still runs: the periodic scan did it.
        assert wait_until(neutralised, 60)
        assert agent.call("list_terminals").content[0]["status"] == "running"
        assert "[core]" in (ws / "live/.git/config").read_text()
        assert user_git(home, ws / "live", "status").returncode == 0  # a repository still
        health = srv.content("app_health")
        check = next(c for c in health["checks"] if c["name"] == "planted-git")
        assert "core.sshcommand" in json.dumps(check["details"]["recent"])
        killed = agent.call("kill_terminal", {"terminalId": tid})
        assert killed.ok
    assert srv.stop() == 0
