"""What confinement costs, measured in one run against the unconfined baseline:

1. a process start: `true` spawned directly, through the exec wrapper with Landlock only (no
   namespaces), and through the whole sealed plan (`Confinement.beneath` + `command`: fixed
   environment and env file, user/mount/network namespaces, private devpts, homes, sockets and
   secrets covered, Landlock), without and with a network gate (the forwarder started);
   interleaved round-robin, minimum and median wall time per spawn;
2. a download from a loopback HTTP server (127.0.0.1 only): curl directly, and curl in a
   confined process whose grant names the server, through the network wall (forwarder in the
   namespace hands the connection itself over the control channel -> the gate -> the server:
   one relay); best throughput of the rounds.

    python bench/bench_confine.py [--rounds N] [--mb MB] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

from meith_core import ConfinedSpawn, Confinement, landlock_status
from meith_core.confine.channel import ControlChannel
from meith_core.confine.plan import NetworkAccess


def spawn(argv: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, env=env)
    return time.perf_counter() - start


_BLOB_SERVER = """
import http.server, os, sys
size = int(sys.argv[1])
blob = os.urandom(1 << 20) * (size >> 20)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(blob)))
        self.end_headers()
        view = memoryview(blob)
        for i in range(0, len(blob), 1 << 20):
            self.wfile.write(view[i : i + (1 << 20)])
    def log_message(self, *a):
        pass
httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(httpd.server_address[1], flush=True)
httpd.serve_forever()
"""


@contextlib.contextmanager
def blob_server(size: int) -> Iterator[int]:
    """A loopback HTTP server in a process of its own (sharing no interpreter with the gate)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _BLOB_SERVER, str(size)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        yield int(proc.stdout.readline())
    finally:
        proc.kill()
        proc.wait()


def curl_speed(
    argv_prefix: list[str], url: str, env: dict[str, str] | None, fds: tuple[int, ...] = ()
) -> float:
    """Bytes per second of one download (curl's own measure)."""
    out = subprocess.run(
        [*argv_prefix, "curl", "-s", "-o", "/dev/null", "-w", "%{speed_download}", url],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        pass_fds=fds,
    ).stdout
    return float(out.strip().replace(",", "."))


def bench_start(tmp: str, rounds: int) -> None:
    status = landlock_status()
    home = os.path.join(tmp, "home")
    os.mkdir(home)
    repo = os.path.join(tmp, "repo")
    os.mkdir(repo)
    landlock_only = Confinement(write_dirs=(repo,), write_files=("/dev/null",))
    # The forwarder's channel: each spawn inherits it; the forwarder exits with the process.
    channel = ControlChannel(lambda sock, _tunnel: sock.close(), lambda name: None)
    channel.open()
    sealed = Confinement.beneath(repo, home=home, extra_dirs=[tmp])
    gated = Confinement.beneath(
        repo,
        home=home,
        extra_dirs=[tmp],
        net=NetworkAccess(control_fd=channel.child_fd, gate=True),
    )
    env = dict(os.environ)
    items: dict[str, object] = {
        "direct": (["true"], None),
        "python": ([sys.executable, "-I", "-S", "-c", "pass"], None),
        "landlock": (landlock_only.wrap(["true"]), None),
    }
    if status.namespaces:
        items["sealed"] = lambda: sealed.command(["true"], env)
        items["sealed+net"] = lambda: gated.command(["true"], env)
    times: dict[str, list[float]] = {k: [] for k in items}
    for _ in range(rounds):
        for name, item in items.items():
            if callable(item):
                start = time.perf_counter()
                argv, fixed = item()
                subprocess.run(argv, check=True, env=fixed, pass_fds=(channel.child_fd,))
                times[name].append(time.perf_counter() - start)
            else:
                argv, e = item  # type: ignore[misc]
                times[name].append(spawn(argv, e))
    print("process start (wall time per spawn):")
    for name, values in times.items():
        print(
            f"{name:>12}: min {min(values) * 1000:7.2f} ms   "
            f"median {statistics.median(values) * 1000:7.2f} ms"
        )
    base = min(times["direct"])
    for name in ("landlock", "sealed", "sealed+net"):
        if name in times:
            print(
                f"{name} adds {(min(times[name]) - base) * 1000:.1f} ms per start "
                f"(median {(statistics.median(times[name]) - statistics.median(times['direct'])) * 1000:.1f} ms;"
                f" ratio {min(times[name]) / base:.1f}x)"
            )


def bench_download(tmp: str, rounds: int, mb: int) -> None:
    if shutil.which("curl") is None or not landlock_status().namespaces:
        print("download: skipped (no curl, or no network namespaces here)")
        return
    repo = os.path.join(tmp, "dl")
    os.mkdir(repo)
    with blob_server(mb << 20) as port:
        url = f"http://127.0.0.1:{port}/blob"
        direct: list[float] = []
        walled: list[float] = []
        for _ in range(rounds):
            direct.append(curl_speed([], url, None))
            # The one spawn API, as a plugin uses it: a spawn of its own per run (its channel,
            # its gate). The server is a named host-loopback destination: curl connects to it
            # at its address inside, the forwarder tunnels it through the gate.
            spawn = ConfinedSpawn.prepare(repo, home=None, net=[f"127.0.0.1:{port}"])
            assert spawn is not None
            try:
                spawn.open_network()
                argv, fixed = spawn.command(["sh", "-c", 'exec "$@"', "sh"], dict(os.environ))
                walled.append(curl_speed(argv, url, fixed, spawn.pass_fds))
            finally:
                spawn.cleanup()
    best_d, best_w = max(direct), max(walled)
    print(f"download of {mb} MB from 127.0.0.1 (best of {rounds}):")
    print(f"      direct: {best_d / 1e6:8.1f} MB/s")
    print(f"through wall: {best_w / 1e6:8.1f} MB/s   ({best_w / best_d * 100:.0f}% of direct)")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--mb", type=int, default=256, help="download size")
    parser.add_argument("--quick", action="store_true", help="3 rounds, 16 MB (a smoke run)")
    opts = parser.parse_args()
    rounds = 3 if opts.quick else opts.rounds
    mb = 16 if opts.quick else opts.mb
    status = landlock_status()
    print(status.describe())
    if not status.available:
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        bench_start(tmp, rounds)
        bench_download(tmp, max(3, rounds // 5), mb)
    return 0


if __name__ == "__main__":
    sys.exit(main())
