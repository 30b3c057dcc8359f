"""Sealed confinement, tried as an attacker would: an agent session holding nothing but
`starts-process --cwd REPO` (and, where named, `--net`) starts real processes through the
real process plugin, and each of them attacks one wall.

1. code before the sandbox: loader variables in the caller's `env`;
2. other terminals: another session's (and the user's) /dev/pts/N;
7. secrets: ~/.ssh, ~/.aws, another meith home, a path the user added to the setting;
8. the network: TCP and UDP to loopback listeners outside, with and without proxy variables;
   the destinations the grant names through the gate; a dev server reached from the host.

Loopback listeners on 127.0.0.1 only. (Item 3, other runtimes, needs two real `meith serve`:
test_supervisor_sealed_runtimes.py.)"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import urllib.request
from pathlib import Path

import pytest

from meith_core import MeithHome, secret_paths
from meith_core.base.home_registry import register_home
from tests.core.confine.support import needs_landlock, needs_namespaces, results
from tests.process.conftest import Proc
from tests.process.sealed import (
    DONE,
    agent,
    compile_constructor_library,
    free_port,
    http_server,
    logs,
    needs_cc,
    only_the_sentinel_arrives,
    run_dev,
    tcp_listener,
    udp_listener,
)
from tests.process.support import eventually, ok

pytestmark = [pytest.mark.anyio, pytest.mark.kernel, needs_landlock]


@needs_cc
@pytest.mark.slow
@pytest.mark.parametrize("variable", ["LD_PRELOAD", "LD_AUDIT"])
async def test_a_loader_variable_never_runs_code_before_the_walls(
    proc: Proc, tmp_path: Path, variable: str
) -> None:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    canary = outside / "pwned"
    lib = compile_constructor_library(repo, canary)
    caller = agent(proc, repo)
    text = await run_dev(
        proc,
        caller,
        repo,
        f"echo seen:${variable}; echo {DONE}",
        env={variable: str(lib)},
    )
    # The caller's environment reached the command...
    assert results(text)["seen"] == str(lib), text
    # ...but the library never ran outside the walls: not in the wrapper (python), and inside
    # them it cannot write outside its directory.
    assert not canary.exists(), canary.read_text()


@needs_cc
@pytest.mark.slow
async def test_a_terminal_s_loader_variable_never_runs_code_before_the_walls(
    proc: Proc, tmp_path: Path
) -> None:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    canary = outside / "pwned"
    lib = compile_constructor_library(repo, canary)
    caller = agent(proc, repo)
    term = ok(
        await proc.rt.call(
            "create_terminal",
            {"cwd": str(repo), "shell": "/bin/sh", "env": {"LD_PRELOAD": str(lib)}},
            caller=caller,
        )
    )
    ok(
        await proc.rt.call(
            "write_terminal",
            {"terminalId": term["id"], "data": f"echo {DONE}-$((1+1))\r"},
            caller=caller,
        )
    )

    async def done() -> bool:
        return f"{DONE}-2" in await logs(proc, caller, term["id"])

    await eventually(done, "the terminal to answer", deadline_s=60)
    assert not canary.exists(), canary.read_text()


@needs_cc
@pytest.mark.slow
async def test_a_run_command_s_loader_variable_never_runs_code_before_the_walls(
    proc: Proc, tmp_path: Path
) -> None:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    canary = outside / "pwned"
    lib = compile_constructor_library(repo, canary)
    caller = agent(proc, repo)
    done = ok(
        await proc.rt.call(
            "run_command",
            {"cwd": str(repo), "shell": "echo seen:$LD_PRELOAD", "env": {"LD_PRELOAD": str(lib)}},
            caller=caller,
        )
    )
    assert done["stdout"].strip() == f"seen:{lib}"  # the command got the caller's variable
    assert done["confinedTo"] == str(repo.resolve())
    assert not canary.exists(), canary.read_text()  # and the library ran only inside the walls


# -- 2. a confined process sees only its own terminal -------------------------------------------


@needs_namespaces
@pytest.mark.slow
async def test_a_confined_process_cannot_open_another_terminal(proc: Proc, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    # The user's own terminal, and another session's meith terminal (unconfined: a cli one).
    master, slave = os.openpty()
    users_tty = os.ttyname(slave)
    other = ok(
        await proc.rt.call(
            "create_terminal", {"cwd": str(tmp_path), "shell": "/bin/sh"}, caller="internal"
        )
    )
    other_tty = await _tty_of(proc, other["id"])
    caller = agent(proc, repo)
    steps = []
    for name, tty in (("user", users_tty), ("other", other_tty)):
        steps += [
            f"echo injected > {tty}; echo {name}_write:$?",
            f"timeout 1 cat {tty} > /dev/null; echo {name}_read:$?",
        ]
    steps += ["ls /dev/pts | tr '\\n' ' '; echo", f"echo {DONE}"]
    try:
        text = await run_dev(proc, caller, repo, "; ".join(steps))
        got = results(text)
        for key in ("user_write", "user_read", "other_write", "other_read"):
            assert got[key] not in ("0", "124"), (key, text)  # 124: cat waited, it was open
        os.set_blocking(master, False)
        try:
            leaked = os.read(master, 4096)
        except BlockingIOError:
            leaked = b""
        assert b"injected" not in leaked
    finally:
        os.close(master)
        os.close(slave)


@needs_namespaces
@pytest.mark.slow
async def test_a_confined_terminal_keeps_its_own_terminal(proc: Proc, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    master, slave = os.openpty()
    users_tty = os.ttyname(slave)
    caller = agent(proc, repo)
    try:
        term = ok(
            await proc.rt.call(
                "create_terminal", {"cwd": str(repo), "shell": "/bin/sh"}, caller=caller
            )
        )
        line = (
            f"echo mine > /dev/tty; echo own:$?; echo x > {users_tty}; echo user:$?; echo {DONE}\r"
        )
        ok(
            await proc.rt.call(
                "write_terminal", {"terminalId": term["id"], "data": line}, caller=caller
            )
        )

        async def done() -> str:
            text = (await logs(proc, caller, term["id"])).replace("\r", "")
            return text if f"\n{DONE}" in text else ""

        got = results(await eventually(done, "the terminal", deadline_s=60))
        assert got["own"] == "0"
        assert got["user"] != "0"
    finally:
        os.close(master)
        os.close(slave)


async def _tty_of(proc: Proc, term_id: str) -> str:
    ok(
        await proc.rt.call(
            "write_terminal",
            {"terminalId": term_id, "data": "echo tty:$(tty)\r"},
            caller="internal",
        )
    )

    async def tty() -> str:
        text = (await logs(proc, "internal", term_id)).replace("\r", "")  # type: ignore[arg-type]
        for line in text.splitlines():
            if line.startswith("tty:/dev/pts/"):
                return line[4:]
        return ""

    return await eventually(tty, "the other terminal's tty")


@needs_namespaces
@pytest.mark.slow
async def test_a_confined_process_cannot_read_secrets(proc: Proc, tmp_path: Path) -> None:
    home = Path.home()  # the tests' own HOME (tests/process/conftest.py)
    (home / ".ssh").mkdir(mode=0o700)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("aws_secret_access_key=x")
    (home / ".netrc").write_text("machine example.org password hunter2")
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "token").write_text("VAULT")
    other = MeithHome(tmp_path / "other-home").ensure()
    other.grants_path.write_text('{"grants": []}')
    register_home(other.root)
    settings = proc.rt.settings.load().get("confinement") or {}
    listed = [*secret_paths(), str(vault)]
    proc.rt.settings.merge({"confinement": {**settings, "secretPaths": listed}})
    repo = tmp_path / "repo"
    repo.mkdir()
    caller = agent(proc, repo)
    targets = {
        "ssh": home / ".ssh" / "id_ed25519",
        "aws": home / ".aws" / "credentials",
        "netrc": home / ".netrc",
        "vault": vault / "token",
        "otherhome": other.grants_path,
        "ownhome": proc.rt.home.grants_path,
    }
    proc.rt.home.grants_path.write_text('{"grants": []}')
    # Covered: a directory is empty, a file reads as /dev/null; nothing of them comes out.
    steps = [f"echo {key}:$(cat {path} 2>/dev/null | wc -c)" for key, path in targets.items()]
    steps += [f"ls {home}/.ssh | wc -l | sed s/^/sshlist:/", f"echo {DONE}"]
    got = results(await run_dev(proc, caller, repo, "; ".join(steps)))
    for key in targets:
        assert got[key] == "0", (key, got)
    assert got["sshlist"].strip() == "0"


# -- 8. network by grant, deny by default ------------------------------------------------------

_RAW = (
    "import socket, sys\n"
    "kind, port = sys.argv[1], int(sys.argv[2])\n"
    "try:\n"
    "    if kind == 'tcp':\n"
    "        s = socket.create_connection(('127.0.0.1', port), timeout=3); s.sendall(b'leak')\n"
    "    else:\n"
    "        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
    "        for _ in range(5): s.sendto(b'leak', ('127.0.0.1', port))\n"
    "    print(kind + ':sent')\n"
    "except OSError as exc:\n"
    "    print(kind + ':refused', exc.errno)\n"
)


@needs_namespaces
@pytest.mark.slow
async def test_no_network_without_a_net_grant_tcp_and_udp(proc: Proc, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "raw.py").write_text(_RAW)
    caller = agent(proc, repo)
    with tcp_listener() as (tport, tgot), udp_listener() as (uport, ugot):
        text = await run_dev(
            proc,
            caller,
            repo,
            f"{sys.executable} raw.py tcp {tport}; {sys.executable} raw.py udp {uport};"
            f" curl -s -m 3 http://127.0.0.1:{tport}/; echo curl:$?; echo {DONE}",
        )
        await only_the_sentinel_arrives(tcp=(tport, tgot), udp=(uport, ugot))
    got = results(text)
    assert got["tcp"].startswith("refused"), text
    assert got["curl"] != "0"


@needs_namespaces
@pytest.mark.slow
async def test_named_destinations_through_the_gate_and_nothing_else(
    proc: Proc, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "raw.py").write_text(_RAW)
    fetch = (
        "import sys, urllib.request\n"
        "print('urllib:' + urllib.request.urlopen(sys.argv[1], timeout=10).read().decode().strip())\n"
    )
    (repo / "fetch.py").write_text(fetch)
    with http_server() as allowed, http_server() as other, tcp_listener() as (tport, tgot):
        caller = agent(proc, repo, net=(f"127.0.0.1:{allowed}",))
        steps = [
            # 127.0.0.1 inside is the process's own loopback, which its clients reach directly
            # (no_proxy); the test's listeners are on the host's: reached through the gate.
            "unset no_proxy NO_PROXY",
            f"curl -s -m 10 http://127.0.0.1:{allowed}/ | sed s/^/curl:/",
            f"{sys.executable} fetch.py http://127.0.0.1:{allowed}/",
            # Tunnelled (what https clients and git do), and refused destinations.
            f"curl -s -m 10 -p http://127.0.0.1:{allowed}/ | sed s/^/tunnel:/",
            f"curl -s -m 10 -o /dev/null -w '%{{http_code}}' http://127.0.0.1:{other}/"
            " | sed s/^/other:/; echo",
            f"curl -s -m 10 http://127.0.0.1:{other}/ | sed s/^/why:/",
            # A named host-loopback destination is there for clients that know nothing of
            # proxies too (at its address and port inside); nothing else is.
            f"curl -s -m 3 --noproxy '*' http://127.0.0.1:{allowed}/ | sed s/^/noproxy:/",
            f"{sys.executable} raw.py tcp {allowed}",
            f"{sys.executable} raw.py tcp {tport} | sed s/^tcp:/other_tcp:/",
            f"echo {DONE}",
        ]
        text = await run_dev(proc, caller, repo, "; ".join(steps))
        await only_the_sentinel_arrives(tcp=(tport, tgot))
    got = results(text)
    assert got["curl"] == "hello from the loopback", text
    assert got["urllib"] == "hello from the loopback", text
    assert got["tunnel"] == "hello from the loopback", text
    assert got["other"] == "403", text
    assert "--net" in got["why"], text
    assert f"127.0.0.1:{other}" in got["why"], text
    assert got["noproxy"] == "hello from the loopback", text
    assert got["tcp"] == "sent", text
    assert got["other_tcp"].startswith("refused"), text
    refused = [
        r
        for r in proc.rt.audit.read()
        if r.get("outcome") == "NETWORK_REFUSED" and f"127.0.0.1:{other}" in json.dumps(r)
    ]
    assert refused, "the refusal is in the audit trail"
    assert refused[0]["sessionId"] == caller.session_id
    assert "--net" in refused[0]["reason"]


@needs_namespaces
@pytest.mark.slow
async def test_a_flood_of_refused_destinations_is_coalesced(proc: Proc, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    with http_server() as allowed:
        caller = agent(proc, repo, net=(f"127.0.0.1:{allowed}",))
        flood = "; ".join(
            f"curl -s -o /dev/null -m 5 http://127.0.0.1:{port}/" for port in range(1, 61)
        )
        await run_dev(proc, caller, repo, f"unset no_proxy NO_PROXY; {flood}; echo {DONE}")
    before = sum(1 for r in proc.rt.audit.read() if r.get("outcome") == "NETWORK_REFUSED")
    assert 0 < before < 60


@needs_namespaces
@pytest.mark.slow
async def test_a_confined_dev_server_is_reachable_at_localhost(proc: Proc, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "index.html").write_text("served from inside\n")
    port = free_port()
    caller = agent(proc, repo)
    started = ok(
        await proc.rt.call(
            "start_dev_server",
            {
                "cwd": str(repo),
                "command": sys.executable,
                "args": ["-m", "http.server", str(port), "--bind", "127.0.0.1"],
            },
            caller=caller,
        )
    )

    def fetch() -> str:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html", timeout=2) as r:
                return str(r.read().decode())
        except OSError:
            return ""

    async def reachable() -> str:
        return await asyncio.to_thread(fetch)

    assert await eventually(reachable, "the dev server at localhost", deadline_s=30) == (
        "served from inside\n"
    )
    waited = await proc.rt.call(
        "wait_for_dev_server",
        {"devServerId": started["id"], "port": port, "timeoutMs": 20000},
        caller=caller,
    )
    assert ok(waited)["status"] == "running"
    ok(await proc.rt.call("stop_dev_server", {"devServerId": started["id"]}, caller=caller))
