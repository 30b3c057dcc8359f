"""Hardened hosts and containers: where user namespaces are unavailable, meith keeps every wall
it still can (Landlock writes, TCP rules to the gate only, only its own terminal writable), and
`app_health` and the start of a confined process say which walls are missing.

`MEITH_CONFINE_NO_NAMESPACES=1` forces this path on a host that has namespaces."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from meith_core import landlock_status
from tests.core.confine.support import MISSING, needs_landlock, results
from tests.process.conftest import Proc
from tests.process.sealed import (
    DONE,
    agent,
    http_server,
    only_the_sentinel_arrives,
    run_dev,
    tcp_listener,
)
from tests.process.support import ok

pytestmark = [pytest.mark.kernel, needs_landlock]


@pytest.mark.anyio
@pytest.mark.slow
async def test_app_health_and_the_call_say_what_is_missing(
    hardened: None, proc: Proc, tmp_path: Path
) -> None:
    health = ok(await proc.rt.call("app_health"))
    check = next(c for c in health["checks"] if c["name"] == "confinement")
    assert check["status"] == "degraded"
    assert set(check["details"]["missing"]) >= MISSING
    repo = tmp_path / "repo"
    repo.mkdir()
    caller = agent(proc, repo)
    result = await proc.rt.call(
        "start_dev_server", {"cwd": str(repo), "command": "true"}, caller=caller
    )
    assert result.ok
    said = " ".join(d["message"] for d in result.to_wire().get("diagnostics") or [])
    for name in MISSING:
        assert name in said, said


@pytest.mark.anyio
@pytest.mark.slow
async def test_the_walls_that_remain_hold(
    hardened: None, proc: Proc, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSH_AUTH_SOCK", "/tmp/ssh-x/agent.1")
    status = landlock_status()
    if not status.tcp_rules:
        pytest.skip("Landlock before ABI 4 has no TCP rules")
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    master, slave = os.openpty()
    other_tty = os.ttyname(slave)
    raw = (
        "import socket, sys\n"
        "try:\n"
        "    socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=3)\n"
        "    print('tcp:sent')\n"
        "except OSError as exc:\n"
        "    print('tcp:refused', exc.errno)\n"
    )
    (repo / "raw.py").write_text(raw)
    (outside / "readable").write_text("fine")
    secret = Path.home() / ".ssh" / "id_ed25519"
    secret.parent.mkdir(mode=0o700)
    secret.write_text("PRIVATE KEY")
    proc.rt.home.grants_path.write_text('{"grants": []}')
    try:
        with http_server() as allowed, tcp_listener() as (tport, tgot):
            caller = agent(proc, repo, net=(f"127.0.0.1:{allowed}",))
            steps = [
                f"echo x > {outside}/f; echo write:$?",
                f"echo x > {other_tty}; echo tty:$?",
                f"timeout 1 cat {other_tty} > /dev/null; echo ttyread:$?",
                f"cat {secret} > /dev/null; echo secret:$?",
                f"cat {proc.rt.home.grants_path} > /dev/null; echo home:$?",
                f"cat {outside}/readable > /dev/null; echo read:$?",
                f"{sys.executable} raw.py {tport}",
                f"curl -s -m 10 --noproxy '' http://127.0.0.1:{allowed}/ | sed s/^/curl:/",
                f"curl -s -m 10 --noproxy '*' http://127.0.0.1:{allowed}/; echo direct:$?",
                "echo agent:${SSH_AUTH_SOCK:-unset}",  # the sockets are reachable; not named
                f"echo {DONE}",
            ]
            got = results(await run_dev(proc, caller, repo, "; ".join(steps)))
            await only_the_sentinel_arrives(tcp=(tport, tgot))
    finally:
        os.close(master)
        os.close(slave)
    assert got["write"] != "0"
    assert got["tty"] != "0"
    assert got["ttyread"] not in ("0", "124"), got  # 124: it could open it and waited
    assert got["secret"] != "0", got
    assert got["home"] != "0", got
    assert got["read"] == "0", got
    assert got["tcp"].startswith("refused"), got
    assert got["curl"] == "hello from the loopback", got
    assert got["direct"] != "0"
