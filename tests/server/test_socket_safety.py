"""Socket safety of `meith serve`, each property against a real runtime process."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from meith_core.base.instances import is_pid_alive
from tests.harness import MEITH, base_env

# Every test starts a real `meith serve` (or several).
pytestmark = pytest.mark.slow

NOBODY = 65534
as_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="needs root to act as another user (CI runs as root)"
)


def serve_once(
    home: Path, socket_path: str, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    """Run `meith serve` expecting it to refuse to start."""
    return subprocess.run(
        [MEITH, "serve", "--socket", socket_path, "--approvals", "deny", "--log-format", "json"],
        env=base_env(home),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_the_socket_is_0600_in_a_0700_directory(meith_server) -> None:
    srv = meith_server()
    assert stat.S_IMODE(os.stat(srv.socket).st_mode) == 0o600
    assert stat.S_ISSOCK(os.stat(srv.socket).st_mode)
    assert stat.S_IMODE(os.stat(os.path.dirname(srv.socket)).st_mode) == 0o700


def test_the_default_socket_directory_is_created_0700() -> None:
    home = Path(tempfile.mkdtemp(prefix="mh-", dir="/tmp"))
    proc = subprocess.Popen(
        [MEITH, "serve", "--approvals", "deny"],
        env=base_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        sock = home / "run" / "meith.sock"
        for _ in range(600):
            if sock.exists():
                break
            time.sleep(0.05)
        assert stat.S_IMODE(os.stat(home / "run").st_mode) == 0o700
        assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_group_or_world_accessible_socket_directory_is_refused(tmp_path) -> None:
    sockdir = Path(tempfile.mkdtemp(prefix="ms-", dir="/tmp"))
    os.chmod(sockdir, 0o755)
    proc = serve_once(tmp_path / "home", str(sockdir / "s.sock"))
    assert proc.returncode != 0
    assert "accessible to other users" in proc.stderr
    assert not (sockdir / "s.sock").exists()


@as_root
def test_a_socket_directory_owned_by_someone_else_is_refused(tmp_path) -> None:
    sockdir = Path(tempfile.mkdtemp(prefix="ms-", dir="/tmp"))
    os.chown(sockdir, NOBODY, NOBODY)
    proc = serve_once(tmp_path / "home", str(sockdir / "s.sock"))
    assert proc.returncode != 0
    assert "owned by uid 65534" in proc.stderr


def test_a_second_serve_on_the_same_socket_fails_and_the_first_keeps_serving(
    meith_server, tmp_path
) -> None:
    first = meith_server()
    proc = serve_once(tmp_path / "other-home", first.socket)
    assert proc.returncode != 0
    assert "already listening" in proc.stderr
    assert f"pid {first.pid}" in proc.stderr
    assert stat.S_ISSOCK(os.stat(first.socket).st_mode)
    assert first.call("app_health")["ok"] is True


def test_a_stale_socket_left_by_a_killed_runtime_is_replaced(meith_server) -> None:
    first = meith_server()
    first.send_signal(signal.SIGKILL)
    first.proc.wait(timeout=10)
    assert stat.S_ISSOCK(os.stat(first.socket).st_mode)  # left behind
    second = meith_server(home=first.home.root, socket=first.socket)
    assert second.call("app_health")["ok"] is True
    instances = json.loads(second.cli("instances", "--json").stdout)
    assert [r["pid"] for r in instances] == [second.pid]  # the dead one's record was reaped


def test_a_non_socket_file_at_the_socket_path_is_never_deleted(tmp_path) -> None:
    sockdir = Path(tempfile.mkdtemp(prefix="ms-", dir="/tmp"))
    victim = sockdir / "s.sock"
    victim.write_text("precious")
    proc = serve_once(tmp_path / "home", str(victim))
    assert proc.returncode != 0
    assert "not a socket" in proc.stderr
    assert victim.read_text() == "precious"


def test_a_socket_path_longer_than_the_platform_limit_is_a_clear_error(tmp_path) -> None:
    sockdir = Path(tempfile.mkdtemp(prefix="ms-", dir="/tmp"))
    long_path = str(sockdir / ("x" * 120 + ".sock"))
    proc = serve_once(tmp_path / "home", long_path)
    assert proc.returncode != 0
    assert "this platform allows 107" in proc.stderr


def test_a_long_meith_home_falls_back_to_a_short_private_socket_path(tmp_path) -> None:
    home = tmp_path / ("h" * 90)
    proc = subprocess.Popen(
        [MEITH, "serve", "--approvals", "deny"],
        env=base_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert "listening on /tmp/meith-" in line
        sock = line.split("listening on ", 1)[1].split(" ", 1)[0]
        assert stat.S_IMODE(os.stat(os.path.dirname(sock)).st_mode) == 0o700
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@as_root
def test_a_peer_of_another_uid_is_closed_before_a_byte_is_read(meith_server, tmp_path) -> None:
    srv = meith_server()
    # Open the path up (test only) so another user can even reach the socket; the runtime must
    # still refuse the peer by its credentials.
    os.chmod(os.path.dirname(srv.socket), 0o711)
    os.chmod(srv.socket, 0o666)
    script = (
        "import os, socket, json, sys\n"
        f"os.setgid({NOBODY}); os.setuid({NOBODY})\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        f"s.connect({srv.socket!r})\n"
        "try:\n"
        "    s.sendall(json.dumps({'type':'tool_call','requestId':'x','toolName':'app_health','arguments':{}}).encode()+b'\\n')\n"
        "except OSError:\n"
        "    pass\n"
        "s.settimeout(10)\n"
        "try:\n"
        "    data = s.recv(65536)\n"
        "except OSError as exc:\n"
        "    data = b''\n"
        "print('GOT', len(data))\n"
    )
    out = subprocess.run(
        [os.environ.get("PYTHON", "python3"), "-c", script],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert "GOT 0" in out.stdout, out.stdout + out.stderr
    os.chmod(os.path.dirname(srv.socket), 0o700)
    assert "another user" in srv.stderr
    audit = srv.home.audit_path.read_text() if srv.home.audit_path.exists() else ""
    assert '"requestId":"x"' not in audit  # nothing of that peer was read or run


@as_root
def test_the_client_refuses_a_socket_served_by_another_user(tmp_path) -> None:
    sockdir = Path(tempfile.mkdtemp(prefix="ms-", dir="/tmp"))
    os.chmod(sockdir, 0o777)
    path = str(sockdir / "impostor.sock")
    script = (
        "import os, socket, time\n"
        f"os.setgid({NOBODY}); os.setuid({NOBODY})\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        f"s.bind({path!r}); os.chmod({path!r}, 0o666); s.listen(5)\n"
        "print('ready', flush=True)\n"
        "c, _ = s.accept()\n"
        "time.sleep(5)\n"
    )
    impostor = subprocess.Popen(
        [os.environ.get("PYTHON", "python3"), "-c", script], stdout=subprocess.PIPE, text=True
    )
    try:
        assert impostor.stdout is not None
        assert impostor.stdout.readline().strip() == "ready"
        proc = subprocess.run(
            [MEITH, "call", "app_health", "--socket", path],
            capture_output=True,
            text=True,
            timeout=30,
            env=base_env(tmp_path / "h"),
        )
        assert proc.returncode == 3
        assert "served by uid 65534" in proc.stderr
    finally:
        impostor.kill()
        impostor.wait()


def test_connecting_when_nothing_runs_is_one_clear_sentence_and_exit_3(tmp_path) -> None:
    sock = str(Path(tempfile.mkdtemp(prefix="ms-", dir="/tmp")) / "none.sock")
    proc = subprocess.run(
        [MEITH, "call", "app_health", "--socket", sock],
        capture_output=True,
        text=True,
        timeout=30,
        env=base_env(tmp_path / "h"),
    )
    assert proc.returncode == 3
    assert (
        proc.stderr.strip()
        == f"error: No meith runtime is listening at {sock}. Start one with: meith serve"
    )


def test_instance_files_are_written_and_removed_and_point_at_the_socket(meith_server) -> None:
    srv = meith_server(extra_args=("--label", "walk"))
    config = json.loads(srv.home.config_path.read_text())
    assert config["socketPath"] == srv.socket
    assert config["pid"] == srv.pid
    assert config["protocolVersion"] == 1
    assert {"startedAt", "version", "instancesDir", "instancePath", "home"} <= set(config)
    record = json.loads(Path(config["instancePath"]).read_text())
    assert record["label"] == "walk"
    assert {"pid", "socketPath", "protocolVersion", "version", "startedAt", "cwd", "label"} <= set(
        record
    )
    assert stat.S_IMODE(os.stat(config["instancePath"]).st_mode) == 0o600
    srv.stop()
    assert not Path(config["instancePath"]).exists()


def test_stale_instance_records_are_reaped_at_boot(meith_server, tmp_path) -> None:
    home = tmp_path / "home"
    (home / "instances").mkdir(parents=True)
    (home / "instances" / "2147483600.json").write_text(
        json.dumps({"pid": 2147483600, "socketPath": "/nonexistent.sock", "startedAt": 1})
    )
    (home / "instances" / "corrupt.json").write_text("{not json")
    live_but_unreachable = {"pid": os.getpid(), "socketPath": "/nonexistent2.sock", "startedAt": 2}
    (home / "instances" / f"{os.getpid()}.json").write_text(json.dumps(live_but_unreachable))
    srv = meith_server(home=home)
    left = sorted(p.name for p in (home / "instances").iterdir())
    assert left == [f"{srv.pid}.json"]
    assert is_pid_alive(srv.pid)


def test_the_runtime_accepts_root_and_same_uid_peers(meith_server) -> None:
    srv = meith_server()
    s = socket.socket(socket.AF_UNIX)
    s.connect(srv.socket)
    s.sendall(b'{"type":"list_tools"}\n')
    s.settimeout(10)
    assert b'"tools_list"' in s.recv(1 << 20)
    s.close()
