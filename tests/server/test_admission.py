"""Telling a process the runtime started from the local user's own, with real processes:
ancestry through `/proc` (pinned by a pidfd), failing closed, and adopted orphans reaped
without taking their exit statuses from the runtime's own children."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from meith_core.base.peers import peer_credentials, peer_descends_from
from meith_core.serve.orphans import OrphanReaper, adopt_orphans, release_orphans
from tests.harness import wait_until
from tests.server.conftest import Served

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")

_CONNECT = "import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "


@pytest.fixture
def listener() -> Iterator[tuple[socket.socket, str]]:
    with tempfile.TemporaryDirectory(prefix="meith-adm-", dir="/tmp") as d:
        path = os.path.join(d, "s.sock")
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(path)
        sock.listen(8)
        try:
            yield sock, path
        finally:
            sock.close()


def _descends(conn: socket.socket) -> bool:
    pid, _uid, _gid = peer_credentials(conn)
    return peer_descends_from(conn, pid, os.getpid())


def test_a_child_and_a_grandchild_descend_and_this_process_does_not(
    listener: tuple[socket.socket, str],
) -> None:
    sock, path = listener
    for command in (
        [sys.executable, "-c", _CONNECT + "sys.stdin.read()", path],
        ["sh", "-c", f"{sys.executable} -c '{_CONNECT}sys.stdin.read()' {path}; true"],
    ):
        proc = subprocess.Popen(command, stdin=subprocess.PIPE)
        conn, _ = sock.accept()
        try:
            assert _descends(conn) is True
        finally:
            conn.close()
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait()
    a, b = socket.socketpair()
    with a, b:
        assert _descends(a) is False  # the peer is this process itself


def test_a_peer_gone_before_it_is_looked_at_counts_as_a_descendant(
    listener: tuple[socket.socket, str],
) -> None:
    """Its pid may be anyone's by now: never take it for the local user."""
    sock, path = listener
    subprocess.run([sys.executable, "-c", _CONNECT, path], check=True)  # connects, exits, reaped
    conn, _ = sock.accept()
    with conn:
        assert _descends(conn) is True


def test_adopted_orphans_are_reaped_and_own_children_keep_their_status(tmp_path: Path) -> None:
    assert adopt_orphans()
    try:
        # A grandchild orphaned by its parent is adopted by this process, then exits.
        pidfile = tmp_path / "pid"
        script = (
            "import os, sys\n"
            "if os.fork(): os._exit(0)\n"
            "open(sys.argv[1], 'w').write(str(os.getpid()))\n"
        )
        subprocess.run([sys.executable, "-c", script, str(pidfile)], check=True)
        own = subprocess.Popen([sys.executable, "-c", "raise SystemExit(7)"])
        reaper = OrphanReaper(grace_s=60.0)
        assert wait_until(lambda: pidfile.exists() and pidfile.read_text() != "")
        orphan = int(pidfile.read_text())
        os.waitid(os.P_PID, orphan, os.WEXITED | os.WNOWAIT)  # ours now, and exited
        own_status = os.waitid(os.P_PID, own.pid, os.WEXITED | os.WNOWAIT)
        assert own_status is not None
        # Within the grace period nothing is taken, from anyone.
        assert reaper.sweep(now=0.0) == []
        assert reaper.sweep(now=59.0) == []
        assert own.wait() == 7  # its waiter got its status
        # Past it, the zombie nobody waited for is reaped.
        assert orphan in reaper.sweep(now=61.0)
        with pytest.raises(ChildProcessError):
            os.waitpid(orphan, os.WNOHANG)
    finally:
        release_orphans()


@pytest.mark.anyio
async def test_a_peer_that_is_the_runtime_itself_is_refused(served: Served) -> None:
    """A connection whose peer is the runtime's own process is one the runtime was tricked
    into making for someone else (a port forwarder led to its socket): never the user."""
    from meith_core.serve.admission import Admitted, Refusal

    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with mine, theirs:
        served.server.admit_own_process = False
        refused = served.server.admit(mine)
        assert isinstance(refused, Refusal)
        assert "this runtime itself" in refused.reason
        served.server.admit_own_process = True  # what the embedding test harness asks for
        admitted = served.server.admit(mine)
        assert isinstance(admitted, Admitted)
        if admitted.slot is not None:
            served.server.capacity.release(admitted.slot)
