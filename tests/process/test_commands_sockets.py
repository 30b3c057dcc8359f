"""A confined process reaches no Unix socket of the user's, tried as an attacker would: an agent
holding nothing but `starts-process --cwd REPO` runs commands that talk to the user's real tmux
server and real ssh-agent (started by the test, at the places they use by default), to a user
bus, and to sockets the user creates after the process started; the controls show each trick
works for a process that is not confined."""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from meith_core import CallerInfo
from meith_core.base.home_registry import user_tmp_dir
from tests.core.confine.support import needs_namespaces, results
from tests.process.conftest import Proc
from tests.process.sealed import DONE, agent, logs
from tests.process.support import eventually, ok

pytestmark = [pytest.mark.anyio, needs_namespaces, pytest.mark.slow]

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="no tmux")
needs_ssh_agent = pytest.mark.skipif(
    shutil.which("ssh-agent") is None or shutil.which("ssh-add") is None, reason="no ssh-agent"
)


@pytest.fixture
def tmux_socket() -> Iterator[str]:
    """A real tmux server at tmux's default socket directory (/tmp/tmux-UID), under a name of
    its own so that a user's server is never touched."""
    name = f"meith-test-{secrets.token_hex(4)}"
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_TMPDIR")}
    base = ["tmux", "-L", name, "-f", "/dev/null"]
    subprocess.run([*base, "new-session", "-d", "-s", "main", "sleep 600"], check=True, env=env)
    try:
        path = subprocess.run(
            [*base, "display-message", "-p", "#{socket_path}"],
            check=True,
            env=env,
            capture_output=True,
            text=True,
        ).stdout.strip()
        yield path
    finally:
        subprocess.run([*base, "kill-server"], env=env, capture_output=True, check=False)


def tmux_windows(path: str) -> int:
    out = subprocess.run(
        ["tmux", "-S", path, "list-windows", "-a"], capture_output=True, text=True, check=True
    )
    return len(out.stdout.splitlines())


@pytest.fixture
def ssh_agent(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A real ssh-agent (its socket where it puts it by default, /tmp/ssh-*/agent.PID) holding
    a key: `(socket, public key)`."""
    started = subprocess.run(["ssh-agent", "-s"], capture_output=True, text=True, check=True)
    found = dict(
        part.split("=", 1)
        for line in started.stdout.splitlines()
        for part in line.split(";")[:1]
        if "=" in part
    )
    sock, pid = found["SSH_AUTH_SOCK"], int(found["SSH_AGENT_PID"])
    try:
        keys = tmp_path / "keys"
        keys.mkdir()
        key = keys / "id_ed25519"
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "the-users-key", "-f", str(key)],
            check=True,
        )
        env = {**os.environ, "SSH_AUTH_SOCK": sock}
        subprocess.run(["ssh-add", "-q", str(key)], check=True, env=env, capture_output=True)
        yield sock, key.with_suffix(".pub")
    finally:
        os.kill(pid, 15)


@pytest.fixture
def runtime_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """`XDG_RUNTIME_DIR` of the runtime, outside /tmp (as /run/user/UID is), with a user bus."""
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    path = Path(tempfile.mkdtemp(prefix="meith-test-run-", dir=base))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(path))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def unconfined(proc: Proc, cwd: Path) -> CallerInfo:
    """The local user, holding `starts-process` everywhere: what it starts is not confined."""
    session = proc.rt.open_session("cli", cwd=str(cwd))
    proc.rt.grant(session, ["starts-process"])
    return session


def listener(path: Path | str) -> socket.socket:
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(8)
    return srv


_PROBE = """
import os, socket, sys
for label, path in zip(sys.argv[1::2], sys.argv[2::2]):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        print(f"{label}:connected")
    except OSError as exc:
        print(f"{label}:refused {exc.strerror}")
    finally:
        s.close()
"""


def probe(sockets: dict[str, str]) -> str:
    """A shell line that tries to connect to each socket and prints `label:connected|refused`."""
    args = " ".join(f"{k} {shlex.quote(v)}" for k, v in sockets.items())
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(_PROBE)} {args}"


async def run(proc: Proc, caller: CallerInfo, cwd: Path, line: str) -> dict[str, object]:
    result = await proc.rt.call("run_command", {"cwd": str(cwd), "shell": line}, caller=caller)
    return ok(result)  # type: ignore[no-any-return]


@needs_tmux
async def test_the_users_tmux_server_runs_nothing_for_a_confined_process(
    proc: Proc, tmp_path: Path, tmux_socket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The runtime was started from inside the user's tmux: its environment names the server.
    monkeypatch.setenv("TMUX", f"{tmux_socket},{os.getpid()},0")
    monkeypatch.setenv("TMUX_PANE", "%0")
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    pwned = outside / "pwned"
    caller = agent(proc, repo)
    before = tmux_windows(tmux_socket)
    attack = (
        f"echo tmux:${{TMUX:-unset}}; tmux new-window -d 'touch {pwned}'; echo implicit:$?; "
        f"tmux -S {shlex.quote(tmux_socket)} new-window -d 'touch {pwned}'; echo explicit:$?"
    )
    got = results(str((await run(proc, caller, repo, attack))["stdout"]))
    assert got["tmux"] == "unset", got
    assert got["implicit"] != "0", got
    assert got["explicit"] != "0", got
    assert tmux_windows(tmux_socket) == before
    # Control: the same line, unconfined (the local user's), opens a window that runs it.
    user = unconfined(proc, repo)
    got = results(str((await run(proc, user, repo, attack))["stdout"]))
    assert got["explicit"] == "0", got
    await eventually(pwned.exists, "the unconfined tmux window to run the command")


@needs_ssh_agent
async def test_the_users_ssh_agent_neither_lists_nor_signs_for_a_confined_process(
    proc: Proc,
    tmp_path: Path,
    ssh_agent: tuple[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sock, public = ssh_agent
    monkeypatch.setenv("SSH_AUTH_SOCK", sock)
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(public, repo / "key.pub")
    (repo / "data").write_text("push as the user\n")
    caller = agent(proc, repo)
    attack = (
        "echo sock:${SSH_AUTH_SOCK:-unset}; ssh-add -l >/dev/null 2>&1; echo implicit:$?; "
        f"SSH_AUTH_SOCK={shlex.quote(sock)} ssh-add -l; echo explicit:$?; "
        f"SSH_AUTH_SOCK={shlex.quote(sock)} ssh-keygen -Y sign -f key.pub -n file data "
        ">/dev/null 2>&1; echo signed:$?"
    )
    done = await run(proc, caller, repo, attack)
    got = results(str(done["stdout"]))
    assert got["sock"] == "unset", done
    for step in ("implicit", "explicit", "signed"):
        assert got[step] != "0", done
    assert "the-users-key" not in str(done["stdout"])
    assert not (repo / "data.sig").exists()
    # Control: unconfined, the agent lists the key and signs with it.
    user = unconfined(proc, repo)
    done = await run(proc, user, repo, attack)
    got = results(str(done["stdout"]))
    assert got["explicit"] == "0", done
    assert got["signed"] == "0", done
    assert "the-users-key" in str(done["stdout"])


async def test_the_user_bus_and_the_display_are_neither_named_nor_reachable(
    proc: Proc, tmp_path: Path, runtime_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bus = listener(runtime_dir / "bus")
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={runtime_dir / 'bus'}")
    monkeypatch.setenv("DISPLAY", ":77")
    monkeypatch.setenv("WAYLAND_DISPLAY", "wayland-0")
    monkeypatch.setenv("STY", "123.pts-0.host")
    repo = tmp_path / "repo"
    repo.mkdir()
    caller = agent(proc, repo)
    names = ("DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "WAYLAND_DISPLAY", "STY", "XDG_RUNTIME_DIR")
    line = "; ".join(f"echo {n}:${{{n}:-unset}}" for n in names)
    line += "; " + probe({"bus": str(runtime_dir / "bus")})
    line += f"; ls {shlex.quote(str(user_tmp_dir()))} >/dev/null 2>&1; echo usertmp:$?"
    try:
        got = results(str((await run(proc, caller, repo, line))["stdout"]))
        for name in names[:-1]:
            assert got[name] == "unset", got
        assert got["XDG_RUNTIME_DIR"] != str(runtime_dir), got
        assert got["bus"].startswith("refused"), got
        assert got["usertmp"] != "0", got  # the per-user directory stays hidden
        # Control: unconfined, the bus answers.
        user = unconfined(proc, repo)
        got = results(str((await run(proc, user, repo, line))["stdout"]))
        assert got["bus"] == "connected", got
    finally:
        bus.close()


async def test_sockets_the_user_creates_after_the_start_are_out_of_reach(
    proc: Proc, tmp_path: Path, runtime_dir: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    later = Path(tempfile.mkdtemp(prefix="meith-test-later-", dir="/tmp"))
    targets = {
        "tmp": str(later / "late.sock"),
        "run": str(runtime_dir / "late.sock"),
        "own": str(repo / "own.sock"),
    }
    caller = agent(proc, repo)
    script = (
        "echo ready; while [ ! -e go ]; do sleep 0.05; done; " + probe(targets) + f"; echo {DONE}"
    )
    started = ok(
        await proc.rt.call("start_dev_server", {"cwd": str(repo), "command": script}, caller=caller)
    )

    async def ready() -> str:
        text = await logs(proc, caller, started["id"])
        return text if "ready" in text else ""

    seen: str = await eventually(ready, "the confined process to start")
    assert seen
    listeners = [listener(p) for p in targets.values()]
    try:
        (repo / "go").touch()

        async def finished() -> str:
            text = await logs(proc, caller, started["id"])
            return text if DONE in text else ""

        got = results(await eventually(finished, "the probe to finish", deadline_s=60))
        assert got["tmp"].startswith("refused"), got
        assert got["run"].startswith("refused"), got
        assert got["own"] == "connected", got  # its own directory's sockets stay its own
    finally:
        for srv in listeners:
            srv.close()
        shutil.rmtree(later, ignore_errors=True)


async def test_a_socket_the_grant_names_is_reachable_and_no_other(
    proc: Proc, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    db_dir = Path(tempfile.mkdtemp(prefix="meith-test-db-", dir="/tmp"))
    named, other = db_dir / ".s.PGSQL.5432", db_dir / "other.sock"
    listeners = [listener(named), listener(other)]
    session = proc.rt.open_session("agent", cwd=str(repo))
    proc.rt.grant(session, ["starts-process"], cwd_prefix=str(repo), sockets=[str(named)])
    try:
        done = await run(proc, session, repo, probe({"named": str(named), "other": str(other)}))
        got = results(str(done["stdout"]))
        assert got["named"] == "connected", done
        assert got["other"].startswith("refused"), done
    finally:
        for srv in listeners:
            srv.close()
        shutil.rmtree(db_dir, ignore_errors=True)
