"""What the corpus's attacks share: small programs a confined process runs (an open for
writing, a connection, a CONNECT through its proxy, a swap loop), and the listeners outside
it that tell whether anything arrived. Listeners bind 127.0.0.1 or a path in the lab only."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from meith_core.doctor.corpus import Seen
from meith_core.doctor.programs import DETACH, SWAPPER, script

if TYPE_CHECKING:
    from meith_core.doctor.agent import Agent
    from meith_core.doctor.lab import Lab


@contextlib.contextmanager
def tcp_listener() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP listener on 127.0.0.1 recording what each connection sends."""
    with _served(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", 0)) as (sock, got):
        yield int(sock.getsockname()[1]), got


@contextlib.contextmanager
def udp_listener() -> Iterator[tuple[int, list[bytes]]]:
    with _served(socket.AF_INET, socket.SOCK_DGRAM, ("127.0.0.1", 0)) as (sock, got):
        yield int(sock.getsockname()[1]), got


@contextlib.contextmanager
def unix_listener(address: str) -> Iterator[list[bytes]]:
    """A Unix stream listener at `address` (a path, or `\\0name` for an abstract one)."""
    with _served(socket.AF_UNIX, socket.SOCK_STREAM, address) as (_sock, got):
        yield got


@contextlib.contextmanager
def _served(
    family: int, kind: int, address: str | tuple[str, int]
) -> Iterator[tuple[socket.socket, list[bytes]]]:
    sock = socket.socket(family, kind)
    sock.bind(address)
    if kind == socket.SOCK_STREAM:
        sock.listen(16)
    sock.settimeout(0.1)
    got: list[bytes] = []
    stop = threading.Event()

    def take() -> bool:
        """One datagram or connection, if one is there: whether there was."""
        try:
            if kind == socket.SOCK_DGRAM:
                got.append(sock.recv(1024))
                return True
            conn, _ = sock.accept()
        except OSError:
            return False
        with conn:
            conn.settimeout(2)
            try:
                got.append(conn.recv(1024) or b"<connected>")
            except OSError:
                got.append(b"<connected>")
        return True

    def serve() -> None:
        while not stop.is_set():
            take()
        # What arrived while the block ended is counted too.
        sock.settimeout(0)
        while take():
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield sock, got
    finally:
        stop.set()
        thread.join()
        sock.close()
        if isinstance(address, str) and not address.startswith("\0"):
            with contextlib.suppress(OSError):
                os.unlink(address)


@contextlib.contextmanager
def swapping(a: Path, b: Path, stop: Path) -> Iterator[None]:
    """`a` and `b` swapped in a loop by another process for as long as the block runs."""
    proc = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(a), str(b), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        proc.stdout.readline()
        yield
    finally:
        stop.touch()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def sleeper(token: str) -> str:
    """A command line that sleeps five minutes as one process whose command line holds
    `token` (for `running`)."""
    return f"{sys.executable} -c 'import time; time.sleep(300)' {token}"


def running(token: str) -> list[int]:
    """The processes whose command line holds `token` and that have not exited (zombies
    have). Found by what they run, not by a pid they report: a pid read inside another PID
    namespace is not the host's."""
    found = []
    needle = token.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                if needle not in fh.read():
                    continue
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        if stat[stat.rindex(b")") + 2 :][:1] != b"Z":
            found.append(int(name))
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def connectable(port: int) -> bool:
    """Whether something accepts TCP connections on the host's 127.0.0.1:`port`."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def compile_constructor_library(directory: Path, canary: Path) -> Path:
    """A shared library whose constructor appends its process's pid to `canary`: what a
    loader variable (LD_PRELOAD, LD_AUDIT) would run."""
    source = directory / "evil.c"
    source.write_text(
        "#include <fcntl.h>\n#include <stdio.h>\n#include <unistd.h>\n"
        "unsigned int la_version(unsigned int v) { return v; }\n"
        "__attribute__((constructor)) static void pwn(void) {\n"
        f'  int fd = open("{canary}", O_WRONLY | O_CREAT | O_APPEND, 0600);\n'
        "  if (fd < 0) return;\n"
        '  char line[32]; int n = snprintf(line, sizeof line, "%d\\n", getpid());\n'
        "  write(fd, line, n); close(fd);\n}\n"
    )
    lib = directory / "evil.so"
    subprocess.run(
        ["cc", "-shared", "-fPIC", "-o", str(lib), str(source)], check=True, capture_output=True
    )
    return lib


def read_as_process(
    lab: Lab, *, path: str, confined: bool, scope: Path | None = None, marker: str | None = None
) -> Seen:
    """`cat PATH` by a process of an agent holding `starts-process` (confined to a fresh
    workspace, or `scope`): whether `marker` (the lab's secret) came out."""
    ws = scope or lab.dir("read")
    done = lab.agent(ws, confined=confined).run(f"cat {path}")
    leaked = (marker or lab.secret) in done["stdout"]
    return Seen(
        leaked,
        f"exit {done['exitCode']}, {len(done['stdout'])} bytes read"
        + (f": {done['stdout'].strip()}" if leaked else f" {done['stderr'].strip()}"),
    )


def planted(
    lab: Lab,
    *,
    confined: bool,
    plant: str,
    then: tuple[tuple[str, ...], ...],
    stdin: str | None = None,
    prepare: str = "",
) -> Seen:
    """`plant` (a shell line; CANARY in it names a file outside) run by an agent's process in
    a fresh workspace (after the user ran `prepare` there), then each of `then` (a directory
    and git's arguments) run by the user's own git: whether CANARY was made."""
    ws, out = lab.dir("planted"), lab.dir("planted", outside=True)
    canary = out / "ran"
    if prepare:
        lab.sh(prepare, ws)
    done = lab.agent(ws, confined=confined).run(plant.replace("CANARY", str(canary)))
    for where, *args in then:
        lab.git(ws / where, *args, stdin=stdin)
    ran = canary.exists()
    return Seen(
        ran,
        f"planted (exit {done['exitCode']}{' ' + done['stderr'].strip()[:200] if done['stderr'].strip() else ''}); "
        + ("the user's git ran it" if ran else "the user's git ran nothing"),
    )


def repository(lab: Lab, where: Path, **files: str) -> Path:
    """A repository of the user's at `where` with one commit of `files` (name: text)."""
    where.mkdir(parents=True, exist_ok=True)
    lab.git(where, "init", "-q")
    for name, text in (files or {"README": "hello\n"}).items():
        (where / name).write_text(text)
    lab.git(where, "add", "-A")
    lab.git(where, "commit", "-q", "-m", "the user's commit")
    return where


def hook(path: Path, body: str) -> None:
    """An executable shell script at `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


def local_user(lab: Lab) -> Seen:
    """The trick from outside the runtime's tree: the local user is served as such."""
    with lab.runtime.client("cli") as client:
        caller = client.hello().get("caller")
        listed = len(client.list_sessions())
    return Seen(caller == "cli", f"served {caller}: {listed} sessions listed")


def staged(lab: Lab, hook_body: str, name: str = "pre-commit") -> tuple[Path, Path]:
    """A repository in a fresh workspace with a change staged and `.git/hooks/NAME` running
    `hook_body` (CANARY in it names a file outside): the repository and the canary."""
    ws, out = lab.dir("hooks"), lab.dir("hooks", outside=True)
    repo = repository(lab, ws / "repo")
    canary = out / "ran"
    hook(repo / ".git" / "hooks" / name, hook_body.replace("CANARY", str(canary)))
    (repo / "a.txt").write_text("a\n")
    lab.git(repo, "add", "a.txt")
    return repo, canary


def detached(lab: Lab, *, confined: bool, command: str = "true") -> tuple[Path, Seen]:
    """Run DETACH by an agent's `run_command` (or as the user) in a fresh workspace: the GO
    file that releases the grandchild into `command`, and whether it outlived the call."""
    ws = lab.dir("detached")
    go = ws / "go"
    line = f'{script(ws, "detach.py", DETACH)} {go} "{command}"'
    if confined:
        done = lab.agent(ws).run(line)
        said = f"run_command answered exit {done['exitCode']}"
    else:
        said = f"the user's shell exited {lab.sh(line, ws).returncode}"
    left = running(str(go))
    for pid in left:
        lab.track(pid)
    return go, Seen(
        bool(left),
        f"{said}; its detached grandchild " + (f"still runs (pid {left})" if left else "is gone"),
    )


def leaks(agent: Agent, secret: str, calls: list[tuple[str, dict[str, Any]]]) -> Seen:
    """Each call in turn: whether any answer (result, error, diagnostics) shows `secret`."""
    said = []
    for tool, arguments in calls:
        answer = json.dumps(agent.call(tool, arguments).to_wire())
        if secret in answer:
            return Seen(True, f"{tool} {json.dumps(arguments)} answered: {answer}")
        said.append(f"{tool}: {answer[:200]}")
    return Seen(False, " | ".join(said))


def lines(text: str, word: str) -> list[str]:
    """The lines of `text` that start with `word`."""
    return [line for line in text.splitlines() if line.split(" ", 1)[0] == word]


__all__ = [
    "compile_constructor_library",
    "connectable",
    "detached",
    "free_port",
    "hook",
    "leaks",
    "lines",
    "local_user",
    "planted",
    "read_as_process",
    "repository",
    "running",
    "sleeper",
    "staged",
    "swapping",
    "tcp_listener",
    "udp_listener",
    "unix_listener",
]
