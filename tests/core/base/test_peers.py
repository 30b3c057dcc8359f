"""Peer credentials of a Unix socket, with real processes: whether the peer descends from this
process (ancestry through `/proc`, pinned by a pidfd, failing closed), and whether it may be
confined."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator

import pytest

from meith_core.base.peers import peer_confinement, peer_credentials, peer_descends_from

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


def test_a_peer_of_this_namespace_is_not_taken_for_confined() -> None:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with a, b:
        assert peer_confinement(os.getpid()) is None
