"""meith's hand-written pieces against what could stand in their place, each in one run:

1. start-to-exit of `true`: directly; through meith's exec wrapper with the sealed plan
   (`Confinement.beneath` + `command`, spawned as the runtime spawns it); through bubblewrap
   with the same namespaces only (`--unshare-user --unshare-net --dev-bind / /`), and with the
   same plan's mounts (read-only root but the plan's writable directories, a new /dev, the
   plan's covered and read-only paths). Also a bare interpreter start, and the import of a
   Landlock library where `--library-python` has one. Interleaved round-robin; median and
   p10-p90 of the rounds.
2. a download from a loopback HTTP server with curl: directly, through the network gate
   (`NetworkGate` on 127.0.0.1, in this process's threads as in the runtime's), and through
   the proxy libraries `--library-python` has (proxy.py, pproxy), each as a CONNECT tunnel
   (`curl -p`, the path of TLS) and as a plain forward; median and best of the rounds.
3. the JSON encoders on the values they encode (`timeit`): `dumps_bytes` and the two standard
   library encoders it picks between, pydantic-core's (`plain_json`, the audit trail's), and
   orjson where it is importable (not a dependency): the thread's CPU time (other jobs on
   the machine move it less than wall time), best of 7 runs; and import times.

    python bench/bench_alternatives.py [--rounds N] [--mb MB] [--library-python PY]
        [--part start|download|json ...] [--quick]

bubblewrap (`apt-get install bubblewrap`) and the libraries are optional: what is missing is
skipped and said so.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from collections.abc import Callable, Iterator
from typing import Any

from bench_confine import blob_server

from meith_core import Confinement, landlock_status
from meith_core.audit.plainjson import plain_json
from meith_core.confine.gate import NetworkGate
from meith_core.protocol.framing import _COMPACT, _COMPACT_ASCII, dumps_bytes


def spread(values: list[float], unit: float = 1e3) -> str:
    deciles = statistics.quantiles(values, n=10) if len(values) >= 2 else [values[0]] * 9
    return (
        f"median {statistics.median(values) * unit:8.2f}   "
        f"p10-p90 {deciles[0] * unit:.2f}-{deciles[-1] * unit:.2f}   min {min(values) * unit:.2f}"
    )


def bwrap_plan(plan: Confinement, visible: tuple[str, ...] = ()) -> list[str]:
    """bubblewrap's arguments for the mounts of `plan`: writes only to its directories, its
    covered paths under read-only tmpfs or /dev/null (but those holding a `visible` path),
    its read-only paths, a new /dev."""
    args = ["--unshare-user", "--unshare-net", "--ro-bind", "/", "/", "--dev", "/dev"]
    for d in plan.write_dirs:
        if not d.startswith("/dev/"):
            args += ["--bind", d, d]
    for p in plan.read_only:
        args += ["--ro-bind", p, p]
    for p in plan.hidden:
        if any(v.startswith(p + "/") for v in visible):
            continue
        if os.path.isdir(p):
            args += ["--tmpfs", p, "--remount-ro", p]
        else:
            args += ["--ro-bind", "/dev/null", p]
    return args


def library_has(python: str, module: str) -> bool:
    probe = [python, "-I", "-c", f"import {module}"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


def bench_start(tmp: str, rounds: int, library_python: str) -> None:
    repo, home = os.path.join(tmp, "repo"), os.path.join(tmp, "home")
    secret_dir, secret_file = os.path.join(tmp, "secret"), os.path.join(tmp, "netrc")
    for d in (repo, home, secret_dir):
        os.mkdir(d)
    open(secret_file, "w").close()
    subprocess.run(["git", "init", "-q", repo], check=True)
    plan = Confinement.beneath(repo, home=home, extra_dirs=[tmp], hide=[secret_dir, secret_file])
    env = dict(os.environ)
    items: dict[str, Callable[[], tuple[list[str], dict[str, str] | None]]] = {
        "direct true": lambda: (["true"], None),
        "python -I -S": lambda: ([sys.executable, "-I", "-S", "-B", "-c", "pass"], None),
        "meith wrapper": lambda: plan.command(["true"], env),
    }
    bwrap = shutil.which("bwrap")
    if bwrap is not None:
        bare = [bwrap, "--unshare-user", "--unshare-net", "--dev-bind", "/", "/", "true"]
        items["bwrap, namespaces"] = lambda: (bare, None)
        planned = [bwrap, *bwrap_plan(plan), "true"]
        items["bwrap, same mounts"] = lambda: (planned, None)
        # What bwrap leaves to a helper of meith's: the Landlock rules (and the forwarder, the
        # env file), i.e. meith's wrapper with only its Landlock step, inside bwrap's mounts.
        step = Confinement(write_dirs=plan.write_dirs, write_files=plan.write_files).wrap(["true"])
        stepped = [bwrap, *bwrap_plan(plan, visible=tuple(step)), *step]
        items["bwrap + Landlock step"] = lambda: (stepped, None)
    if library_has(library_python, "landlockpy"):
        lib = [library_python, "-I", "-B", "-c", "import landlockpy"]
        items["import landlockpy"] = lambda: (lib, None)
    times: dict[str, list[float]] = {k: [] for k in items}
    for _ in range(rounds):
        for name, make in items.items():
            start = time.perf_counter()
            argv, fixed = make()
            subprocess.run(argv, check=True, env=fixed)
            times[name].append(time.perf_counter() - start)
    print(
        f"start to exit, ms ({rounds} rounds; {len(plan.hidden)} paths covered, "
        f"{len(plan.read_only)} read-only):"
    )
    for name, values in times.items():
        print(f"  {name:>20}: {spread(values)}")
    if bwrap is None:
        print("  bubblewrap: skipped (no bwrap on PATH)")


#: The longest one download may take.
CURL_MAX_S = 20


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def library_proxy(argv: list[str], port: int) -> Iterator[None]:
    """A proxy server (in a process group of its own: proxy.py forks workers), once it
    accepts connections (bounded wait)."""
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            time.sleep(0.05)
        else:
            raise RuntimeError(f"{argv[0]} did not listen on {port}")
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def curl_rate(url: str, proxy: str | None, tunnel: bool) -> float:
    """Bytes per second of one download, curl's own measure; a download slower than
    `CURL_MAX_S` is cut there and its rate so far counted (proxy.py's plain forward is)."""
    argv = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{speed_download}"]
    argv += ["--max-time", str(CURL_MAX_S)]
    if proxy is not None:
        argv += ["-x", proxy, *(["-p"] if tunnel else [])]
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    done = subprocess.run([*argv, url], capture_output=True, text=True, env=env, check=False)
    code, rate = done.stdout.split()
    if code != "200" or done.returncode not in (0, 28):  # 28: cut at --max-time
        raise RuntimeError(f"download through {proxy}: HTTP {code}, curl exit {done.returncode}")
    return float(rate.replace(",", "."))


def bench_download(rounds: int, mb: int, library_python: str) -> None:
    if shutil.which("curl") is None:
        print("download: skipped (no curl)")
        return
    with blob_server(mb << 20) as port, contextlib.ExitStack() as stack:
        url = f"http://127.0.0.1:{port}/blob"
        gate = NetworkGate([f"127.0.0.1:{port}"])
        access = gate.start_sync()
        stack.callback(gate.close)
        proxies: dict[str, str | None] = {
            "direct": None,
            "meith gate": f"http://127.0.0.1:{access.proxy_port}",
        }
        libraries = {
            "proxy.py": ("proxy", ["-m", "proxy", "--hostname", "127.0.0.1", "--port"]),
            "pproxy": ("pproxy", ["-m", "pproxy", "-l"]),
        }
        for name, (module, args) in libraries.items():
            if not library_has(library_python, module):
                print(f"  {name}: skipped (not importable by {library_python})")
                continue
            lport = free_port()
            last = str(lport) if name == "proxy.py" else f"http://127.0.0.1:{lport}"
            stack.enter_context(library_proxy([library_python, *args, last], lport))
            proxies[name] = f"http://127.0.0.1:{lport}"
        cells = [
            (n, p, t)
            for n, p in proxies.items()
            for t in ((False,) if p is None else (True, False))
        ]
        rates: dict[tuple[str, bool], list[float]] = {(n, t): [] for n, _p, t in cells}
        for _ in range(rounds):
            for name, proxy, tunnel in cells:
                rates[(name, tunnel)].append(curl_rate(url, proxy, tunnel))
    direct = statistics.median(rates[("direct", False)])
    print(f"download of {mb} MB from 127.0.0.1, MB/s ({rounds} rounds):")
    for (name, tunnel), values in rates.items():
        how = "" if name == "direct" else (" CONNECT" if tunnel else " forward")
        med = statistics.median(values)
        print(
            f"  {name + how:>20}: median {med / 1e6:7.0f}   best {max(values) / 1e6:7.0f}   "
            f"({med / direct * 100:.0f}% of direct)"
        )


def sample_values() -> dict[str, Any]:
    """What the encoders meet: a small result, an audit record (about 600 bytes), a
    git_status-sized result (2,000 files listed twice), the same with non-ASCII names, a file
    read (one string)."""
    record = {
        "id": "a_3f9c2d1e0b", "ts": "2026-12-03T13:00:00.000Z", "requestId": "r-17",
        "caller": "agent", "sessionId": "s_9b1e", "toolName": "git_status",
        "capabilities": ["read-only"], "decision": "allowed", "reason": "not privileged",
        "cwd": "/home/user/project", "argsSummary": '{"cwd":"/home/user/project"}',
        "resultSummary": '{"branch":"main","files":[{"path":"src/a.py","index":"M"}]}',
        "plugin": "git", "outcome": "ok", "spaceId": None, "tabId": None, "claimedCaller": None,
        "durationMs": 12.5, "prev": "5d41402abc4b2a76b9719d911017c592" * 2,
    }  # fmt: skip
    files = [
        {
            "path": f"src/pkg{i % 40}/module_{i}.py",
            "index": "M",
            "worktree": " ",
            "staged": i % 3 == 0,
            "status": "modified",
            "additions": i % 17,
            "deletions": i % 5,
        }
        for i in range(2000)
    ]
    status = {"branch": "main", "upstream": "origin/main", "files": files, "unstaged": files}
    accented = {
        **status,
        "files": [{**f, "path": f["path"].replace("module", "módulo")} for f in files],
    }
    read = {
        "path": "big.txt",
        "content": "".join(f"line {i} of a text file\n" for i in range(45000)),
    }
    return {
        "small result": {"ok": True, "content": {"exitCode": 0, "stdout": "ok\n", "ms": 4}},
        "audit record": record,
        "2,000-file result": status,
        "non-ASCII result": accented,
        "1 MiB read": read,
    }


def bench_json(quick: bool) -> None:
    encoders: dict[str, Callable[[Any], bytes]] = {
        "dumps_bytes": dumps_bytes,
        "stdlib UTF-8": lambda v: _COMPACT.encode(v).encode("utf-8"),
        "stdlib ASCII": lambda v: _COMPACT_ASCII.encode(v).encode("ascii"),
        "pydantic-core": plain_json,
    }
    try:
        import orjson  # type: ignore[import-not-found]

        encoders["orjson"] = orjson.dumps
    except ImportError:
        print("  orjson: skipped (not importable; it is no dependency of meith)")
    print("JSON encoding, µs of CPU per value (best of 7 timeit runs, thread CPU time):")
    for label, value in sample_values().items():
        size = len(dumps_bytes(value))
        number = max(1, (20 if quick else 2000) * 600 // size)
        cells = []
        for name, encode in encoders.items():
            runs = timeit.repeat(
                functools.partial(encode, value), time.thread_time, number=number, repeat=7
            )
            cells.append(f"{name} {min(runs) / number * 1e6:9.1f}")
        print(f"  {label:>18} ({size:>9,} B): " + "   ".join(cells))
    for module in ("json", "pydantic_core", "orjson"):
        code = f"import time; t = time.process_time(); import {module}; "
        code += "print(time.process_time() - t)"
        cpu = []
        for _ in range(3 if quick else 9):
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
            if done.returncode != 0:
                break
            cpu.append(float(done.stdout))
        if cpu:
            print(f"  import {module}: {statistics.median(cpu) * 1e3:.1f} ms of CPU (median)")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--mb", type=int, default=200, help="download size")
    parser.add_argument(
        "--library-python",
        default=sys.executable,
        help="an interpreter with proxy.py, pproxy and landlockpy installed (a scratch venv)",
    )
    parser.add_argument("--quick", action="store_true", help="3 rounds, 16 MB (a smoke run)")
    parser.add_argument(
        "--part", action="append", choices=["start", "download", "json"], help="(default: all)"
    )
    opts = parser.parse_args()
    parts = opts.part or ["start", "download", "json"]
    rounds = 3 if opts.quick else opts.rounds
    print(f"load average {os.getloadavg()[0]:.2f}; {landlock_status().describe()}")
    if "start" in parts and not landlock_status().namespaces:
        print("start: skipped (no user namespaces: neither meith's plan nor bwrap's apply)")
    elif "start" in parts:
        with tempfile.TemporaryDirectory() as tmp:
            bench_start(tmp, rounds, opts.library_python)
    if "download" in parts:
        mb = 16 if opts.quick else opts.mb
        bench_download(3 if opts.quick else max(5, rounds // 5), mb, opts.library_python)
    if "json" in parts:
        bench_json(opts.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
