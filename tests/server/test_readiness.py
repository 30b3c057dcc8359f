"""Readiness of a real `meith serve`: once its socket accepts a connection, the runtime is
discoverable and its plugins have started."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.harness import MEITH, base_env


def _connect(path: str) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    return sock


@pytest.mark.slow  # a real `meith serve` with a plugin slow to start
def test_the_socket_accepts_only_once_the_runtime_is_discoverable_and_started(
    tmp_path: Path, probe_env: dict[str, str], probe_dir: Path
) -> None:
    home = tmp_path / "home"
    sock_path = os.path.join(tempfile.mkdtemp(prefix="meith-", dir="/tmp"), "s.sock")
    env = base_env(home, {**probe_env, "PROBE_STARTUP_DELAY": "0.5"})
    with open(tmp_path / "serve.out", "w+b") as out:
        proc = subprocess.Popen(
            [MEITH, "serve", "--socket", sock_path, "--approvals", "deny", "--log-format", "json"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 60
            conn = None
            while conn is None and time.monotonic() < deadline and proc.poll() is None:
                conn = _connect(sock_path)
                if conn is None:
                    time.sleep(0.005)
            assert conn is not None, out.read()
            # The moment a connection is accepted: records written, plugins started.
            config = json.loads((home / "config.json").read_text())
            assert (config["pid"], config["socketPath"]) == (proc.pid, sock_path)
            assert (home / "instances" / f"{proc.pid}.json").exists()
            assert (probe_dir / "started").exists()
            conn.close()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
