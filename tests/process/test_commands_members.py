"""Every process of a confined spawn is found and ended, tried as an attacker would: a process
forks, `setsid()`s, forks again and execs with a clean environment (no marker, not in the
leader's session or group, reparented away from it), then waits to plant `core.fsmonitor` in a
new nested repository once the planted-git scan is over. It holds a lock on a file while it
lives, so the test knows it is gone without waiting for nothing to happen."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from meith_core import CallerInfo, landlock_status
from tests.core.confine.support import needs_namespaces
from tests.process.conftest import Proc
from tests.process.sealed import agent, logs
from tests.process.support import eventually, ok

pytestmark = [pytest.mark.anyio, needs_namespaces, pytest.mark.slow]

#: The grandchild's second stage: take the lock, say so, wait past the scan, plant.
_STAGE2 = """\
exec flock -x lock sh -c 'echo up > started; sleep {delay}; git init -q nested &&
  git -C nested config core.fsmonitor "touch $PWD/pwned"'
"""
#: The first stage: fork, setsid, fork again, exec with a clean environment.
_PLANT = (
    "setsid /bin/sh -c 'env -i PATH=/usr/bin:/bin /bin/sh ./stage2.sh "
    "</dev/null >/dev/null 2>&1 &' </dev/null >/dev/null 2>&1 & "
    "while [ ! -e started ]; do sleep 0.01; done"
)


def plant_scripts(repo: Path, delay: float = 1.5) -> None:
    (repo / "stage2.sh").write_text(_STAGE2.format(delay=delay))


@contextlib.contextmanager
def lock_free(path: Path) -> Iterator[bool]:
    """Whether nothing holds `path`'s lock now (and hold it meanwhile)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


async def until_lock_free(path: Path) -> None:
    def free() -> bool:
        with lock_free(path) as got:
            return got

    await eventually(free, "the grandchild to let go of its lock", deadline_s=30)


def assert_nothing_planted(repo: Path) -> None:
    assert not (repo / "nested").exists(), "the grandchild planted a repository"
    assert not (repo / "pwned").exists()


async def test_a_detached_grandchild_of_run_command_is_ended_before_the_answer(
    proc: Proc, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    plant_scripts(repo)
    caller = agent(proc, repo)
    done = ok(
        await proc.rt.call(
            "run_command", {"cwd": str(repo), "shell": f"{_PLANT}; exit 0"}, caller=caller
        )
    )
    assert done["exitCode"] == 0, done
    assert (repo / "started").exists()
    # Gone by the time the call answers: nothing of the spawn outlives it.
    with lock_free(repo / "lock") as free:
        assert free, "a process of the command outlived the call"
    await until_lock_free(repo / "lock")
    assert_nothing_planted(repo)


async def test_stop_dev_server_ends_a_detached_grandchild(proc: Proc, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    plant_scripts(repo, delay=300)
    caller = agent(proc, repo)
    started = ok(
        await proc.rt.call(
            "start_dev_server",
            {"cwd": str(repo), "command": f"{_PLANT}; echo planted; sleep 300"},
            caller=caller,
        )
    )

    async def planted() -> str:
        text = await logs(proc, caller, started["id"])
        return text if "planted" in text else ""

    seen: str = await eventually(planted, "the grandchild to start")
    assert seen
    ok(await proc.rt.call("stop_dev_server", {"devServerId": started["id"]}, caller=caller))
    with lock_free(repo / "lock") as free:
        assert free, "a process of the dev server outlived stop_dev_server"


async def test_kill_terminal_ends_a_detached_grandchild(proc: Proc, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    plant_scripts(repo, delay=300)
    caller = agent(proc, repo)
    term = ok(
        await proc.rt.call("create_terminal", {"cwd": str(repo), "shell": "/bin/sh"}, caller=caller)
    )
    line = f"{_PLANT}; echo planted-$((2*21))\r"
    ok(
        await proc.rt.call(
            "write_terminal", {"terminalId": term["id"], "data": line}, caller=caller
        )
    )

    async def planted() -> str:
        text = await logs(proc, caller, term["id"])
        return text if "planted-42" in text else ""

    seen: str = await eventually(planted, "the grandchild to start")
    assert seen
    ok(await proc.rt.call("kill_terminal", {"terminalId": term["id"]}, caller=caller))
    with lock_free(repo / "lock") as free:
        assert free, "a process of the terminal outlived kill_terminal"


async def test_a_confined_terminal_keeps_its_controlling_terminal_and_job_control(
    proc: Proc, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    caller = agent(proc, repo)
    term = ok(
        await proc.rt.call(
            "create_terminal", {"cwd": str(repo), "shell": "/bin/bash"}, caller=caller
        )
    )
    tid = term["id"]

    async def write(data: str) -> None:
        ok(await proc.rt.call("write_terminal", {"terminalId": tid, "data": data}, caller=caller))

    async def shows(text: str) -> str:
        async def check() -> str:
            out = (await logs(proc, caller, tid)).replace("\r", "")
            return out if text in out else ""

        found: str = await eventually(check, repr(text), deadline_s=30)
        return found

    await write("sleep 300 & jobs -l; echo ctty-$?; ps -o stat= -p $$; echo stat-$((40+2))\r")
    out = await shows("stat-42")
    assert "ctty-0" in out
    assert "no job control" not in out
    assert "Ss" in out  # the shell leads a session of its own (with the terminal: `+` below)
    await write("stty size; echo size-$((6*7))\r")
    await shows("size-42")
    await write("sleep 301; echo after-$((1+1))\r")
    await eventually(lambda: _sleeping(term["pid"], "301"), "sleep 301 to run")
    await write("\x03")
    await write("echo alive-$((2+3))\r")
    out = await shows("alive-5")
    assert "after-2" not in out
    listed = ok(await proc.rt.call("list_terminals", {}, caller=caller))
    assert listed[0]["status"] == "running"


def _sleeping(pid: int, arg: str) -> bool:
    """Whether `sleep ARG` runs beneath `pid` (seen from outside its namespaces)."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return False
    return any(p.cmdline() == ["sleep", arg] for p in procs if p.is_running())


@pytest.mark.parametrize(
    ("line", "code", "sig"),
    [("exit 3", 3, None), ("kill -TERM $$", None, "SIGTERM"), ("true", 0, None)],
)
async def test_the_commands_exit_status_comes_through(
    proc: Proc, tmp_path: Path, line: str, code: int | None, sig: str | None
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    caller: CallerInfo = agent(proc, repo)
    done = ok(await proc.rt.call("run_command", {"cwd": str(repo), "shell": line}, caller=caller))
    assert (done["exitCode"], done["signal"]) == (code, sig), done


def test_the_status_names_the_members_wall() -> None:
    walls = {w.name: w for w in landlock_status().walls()}
    assert walls["members"].built
    assert "PID namespace" in walls["members"].how


async def test_the_wrapper_reports_a_signal_death_as_its_own(tmp_path: Path) -> None:
    """Run through the wrapper directly: SIGTERM to the wrapper ends the command with it."""
    from meith_core import Confinement

    plan = Confinement.beneath(str(tmp_path))
    argv, env = plan.command(["sleep", "302"], dict(os.environ))
    child = subprocess.Popen(argv, env=env, cwd=tmp_path)
    try:
        await eventually(lambda: _sleeping(child.pid, "302"), "the command to run")
        child.send_signal(signal.SIGTERM)
        assert child.wait(30) == -signal.SIGTERM
    finally:
        child.kill()
        child.wait()
