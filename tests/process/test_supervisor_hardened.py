"""Hardened hosts and containers: where user namespaces are unavailable, meith keeps every wall
it still can (Landlock writes, TCP rules to the gate only, only its own terminal writable),
states exactly which walls are missing — at grant time, in `meith serve`'s banner and in
`app_health` — with the fix, and never claims one it did not build.

`MEITH_CONFINE_NO_NAMESPACES=1` forces this path on a host that has namespaces."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from meith_core import landlock_status
from meith_core.confine.status import NO_NAMESPACES_ENV
from tests.process.conftest import Proc
from tests.process.sealed import (
    DONE,
    agent,
    http_server,
    needs_landlock,
    results,
    run_dev,
    tcp_listener,
)
from tests.process.support import ok

pytestmark = [needs_landlock]

#: What cannot be built without user namespaces (terminals and secrets are then Landlock's).
MISSING = {"homes-and-sockets-hidden", "git-metadata", "udp"}


@pytest.fixture
def hardened(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(NO_NAMESPACES_ENV, "1")
    landlock_status.cache_clear()
    yield
    monkeypatch.delenv(NO_NAMESPACES_ENV)
    landlock_status.cache_clear()


def test_the_status_names_each_missing_wall_with_its_fix(hardened: None) -> None:
    status = landlock_status()
    assert not status.namespaces
    expected = set(MISSING) | (set() if status.tcp_rules else {"network"})
    assert {w.name for w in status.missing()} == expected
    for wall in status.missing():
        assert "sysctl" in wall.fix or "Landlock" in wall.fix
    assert "MISSING" in status.describe()
    for name in MISSING:
        assert name in status.describe()
    details = status.to_dict()
    assert set(details["missing"]) == expected  # type: ignore[arg-type]


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
async def test_the_walls_that_remain_hold(hardened: None, proc: Proc, tmp_path: Path) -> None:
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
                f"echo {DONE}",
            ]
            got = results(await run_dev(proc, caller, repo, "; ".join(steps)))
            assert tgot == []
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


def test_the_banner_of_meith_serve_names_the_missing_walls(meith_server: Any) -> None:
    srv = meith_server(env={NO_NAMESPACES_ENV: "1"})
    banner = srv.stdout
    assert "walls MISSING" in banner, banner
    for name in MISSING:
        assert f"- {name}: fix:" in banner, banner
    # At grant time too.
    added = srv.cli(
        "grants",
        "add",
        "-c",
        "starts-process",
        "--cwd",
        str(srv.home.root.parent),
        env={NO_NAMESPACES_ENV: "1"},
    )
    assert added.returncode == 0, added.stderr
    for name in MISSING:
        assert f"wall missing here: {name}:" in added.stderr, added.stderr


def test_the_banner_claims_nothing_it_did_not_build(meith_server: Any) -> None:
    srv = meith_server()
    if landlock_status().missing():
        assert "walls MISSING" in srv.stdout
    else:
        assert "every wall built" in srv.stdout
