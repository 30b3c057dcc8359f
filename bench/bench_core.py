"""Benchmark of meith's core: `meith serve`, its clients and the `meith` CLI.

One run, everything interleaved, medians of repetitions:

- sequential round-trip latency (p50, p99) of a trivial read-only tool (`bench_echo`, from a
  benchmark-only plugin found through entry points) through a real `meith serve`, against
  - the floor: a bare asyncio NDJSON echo server on a Unix socket, driven by the same meith
    client code;
  - the peer: the official MCP Python SDK serving the same tool over stdio, driven by the SDK's
    own stdio client;
- the same sync clients' calls alternating one by one, meith's and the floor's (issue 36's
  method: the floor is not measured in a block of its own), p50 per run;
- throughput with 1, 8 and 64 concurrent connections (the MCP peer: one stdio session each);
- wall time of `meith --help`, `meith tools`, `meith call` against a minimal typer app and
  `python -c pass`;
- peak RSS of the runtime during the 64-connection runs;
- with `--before SRC`, a second `meith serve` running the `meith_core` sources under SRC (an
  older checkout: `git archive main meith_core | tar -x -C SRC`), measured in the same run
  against the same baselines;

then a table with PASS/MISS against the issue's targets, and JSON in bench/results/core.json.

    python bench/bench_core.py [--quick] [--mcp-64] [--before SRC]
    python bench/bench_core.py --profile     (diagnosis instead: `meith serve` under cProfile)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.metadata
import importlib.util
import json
import math
import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _launch import MEITH, MeithServer  # bench/ is the script's directory: sys.path[0]

try:
    import psutil  # type: ignore[import-untyped,unused-ignore]
except ImportError:
    sys.exit("bench_core.py needs psutil and mcp; `nox -s bench -- core` installs and runs it")

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_PATH = BENCH_DIR / "results" / "core.json"
PY = sys.executable
TOOL = "bench_echo"
TEXT = "hello meith"
CONCURRENCY = (1, 8, 64)

# Targets: against the floor, the MCP SDK peer and a minimal typer app.
#: The layering issue's (18) targets for a trivial call: p50 at most 2.5x the echo floor's,
#: and the runtime's CPU per call under 150 us.
FLOOR_MAX_RATIO = 2.5
#: Issue 36's: p50 at most 2.0x the echo floor's with the stdlib sync client, the two servers'
#: calls alternating one by one (the issue's method), in every run.
ALTERNATING_MAX_RATIO = 2.0
SERVER_CPU_MAX_US = 150.0
PEER_MIN_SPEEDUP = 5.0
PEER_MIN_THROUGHPUT_RATIO = 20.0
CLI_MAX_RATIO = 1.3


@dataclass(frozen=True)
class Plan:
    """How much to measure; `--quick` for a smoke run."""

    # Many short repetitions: bursts of foreign load on a shared machine then hit every target
    # alike instead of one target's whole block.
    lat_reps: int = 15
    lat_calls: int = 140  # per repetition, meith and the floor
    lat_calls_peer: int = 50  # the peer is ~10x slower
    alt_runs: int = 3
    alt_calls: int = 1000  # per run and server, alternating call by call
    thr_reps: int = 5
    thr_window_s: float = 0.6
    thr_warmup_s: float = 0.15
    cli_reps: int = 7
    peer_sessions: int = 8

    @classmethod
    def quick(cls) -> Plan:
        return cls(
            lat_reps=3,
            alt_runs=2,
            alt_calls=200,
            lat_calls=100,
            lat_calls_peer=30,
            thr_reps=1,
            thr_window_s=0.4,
            thr_warmup_s=0.1,
            cli_reps=2,
            peer_sessions=8,
        )


class BenchError(RuntimeError):
    """Something the benchmark depends on did not work; the message says what."""


# -- statistics ---------------------------------------------------------------------------


def percentile(samples: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(samples)
    if not ordered:
        return float("nan")
    rank = max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))
    return ordered[rank]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def rotated(items: Sequence[str], rep: int) -> list[str]:
    """Each repetition starts with a different target, so drift and noise spread evenly."""
    k = rep % len(items)
    return [*items[k:], *items[:k]]


# -- processes ----------------------------------------------------------------------------


def _private_dir(parent: Path, name: str) -> Path:
    path = parent / name
    path.mkdir(mode=0o700)
    return path


def write_plugin_distribution(root: Path) -> None:
    """A `*.dist-info` on the serve process's path: entry-point discovery finds the bench
    plugin like any installed third-party plugin, and nothing is installed into the venv."""
    dist = root / "meith_bench_plugin-0.0.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: meith-bench-plugin\nVersion: 0.0.0\n"
    )
    (dist / "entry_points.txt").write_text("[meith.plugins]\nbench = _core_plugin:BenchPlugin\n")


#: Dropped from every child's environment. PYTHONDONTWRITEBYTECODE in particular: without
#: bytecode caches every process would recompile each module it imports at every start, which
#: is not how an installed meith (or anything else) runs.
_DROPPED_ENV = ("MEITH_", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE")


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED_ENV)}


@dataclass
class Proc:
    """A server subprocess this benchmark started (own process group), and its output files."""

    name: str
    popen: subprocess.Popen[bytes]
    out_path: Path
    err_path: Path
    socket: str = ""

    @property
    def pid(self) -> int:
        return self.popen.pid

    def output(self) -> str:
        out = self.out_path.read_text(errors="replace")
        err = self.err_path.read_text(errors="replace")
        return f"--- {self.name} stdout\n{out[-4000:]}\n--- {self.name} stderr\n{err[-4000:]}"

    def wait_for(self, marker: str, timeout_s: float = 60.0) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            text = self.out_path.read_text(errors="replace")
            if marker in text:
                return text
            if self.popen.poll() is not None:
                raise BenchError(
                    f"{self.name} exited with {self.popen.returncode}\n{self.output()}"
                )
            time.sleep(0.02)
        raise BenchError(f"{self.name} did not start within {timeout_s:g}s\n{self.output()}")

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.popen.pid, signal.SIGKILL)  # the group this script created
                self.popen.wait(timeout=5)


def start_proc(name: str, argv: list[str], env: dict[str, str], logdir: Path) -> Proc:
    out_path, err_path = logdir / f"{name}.out", logdir / f"{name}.err"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        popen = subprocess.Popen(
            argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True
        )
    return Proc(name, popen, out_path, err_path)


@dataclass
class Setup:
    tmp: Path
    serve: MeithServer
    echo: Proc
    #: The `--before` runtime, when there is one.
    before: MeithServer | None = None

    @property
    def meith_socket(self) -> str:
        return self.serve.socket

    @property
    def echo_socket(self) -> str:
        return self.echo.socket

    @property
    def cli_env(self) -> dict[str, str]:
        # The CLI gets no PYTHONPATH: `meith tools`/`meith call` must not need the plugin.
        return {k: v for k, v in self.serve.cli_env.items() if k != "PYTHONPATH"}

    @property
    def pids(self) -> set[int]:
        return {self.serve.pid, self.echo.pid} | ({self.before.pid} if self.before else set())


def _start_serve(home: Path, prefix: tuple[str, ...], pythonpath: str) -> MeithServer:
    server = MeithServer(
        home,
        command=prefix,
        env={"PYTHONPATH": pythonpath},
        drop_env=("PYTHONPATH", "PYTHONDONTWRITEBYTECODE"),
    )
    line = next((ln for ln in server.stdout.splitlines() if "listening on" in ln), "")
    if "bench" not in line.split("plugins:", 1)[-1].split(";")[0]:
        output = server.output()
        server.stop()
        raise BenchError(f"the bench plugin did not load:\n{output}")
    return server


def _entry_command(before: Path) -> tuple[str, ...]:
    """The `meith` command of the tree under `before`, as its own pyproject declares it: the
    installed `meith` script imports today's module layout, which an older tree may not have
    (`meith_core._cli` before the relayout, `meith_core.cli` after)."""
    import tomllib

    meta = tomllib.loads((before / "meith_core" / "pyproject.toml").read_text())
    module, _, func = meta["project"]["scripts"]["meith"].partition(":")
    return (PY, "-c", f"import sys; from {module} import {func}; sys.exit({func}())")


@contextlib.contextmanager
def servers(serve_prefix: list[str] | None = None, before: Path | None = None) -> Iterator[Setup]:
    """`meith serve` (every installed plugin plus the bench plugin) and the echo floor.

    `serve_prefix` replaces the `meith` executable (the cProfile wrapper); `before` adds a
    runtime of its own (own home and socket) importing `meith_core` from `before/meith_core/src`.
    """
    tmp = Path(tempfile.mkdtemp(prefix="meith-bench-", dir="/tmp"))
    os.chmod(tmp, 0o700)
    plugin_root = _private_dir(tmp, "plugin")
    write_plugin_distribution(plugin_root)
    sockets = _private_dir(tmp, "run")
    pythonpath = f"{plugin_root}{os.pathsep}{BENCH_DIR}"
    prefix = tuple(serve_prefix or [MEITH])
    started: list[MeithServer] = []
    echo: Proc | None = None
    try:
        started.append(_start_serve(tmp / "home", prefix, pythonpath))
        echo_socket = str(sockets / "echo.sock")
        echo_argv = [PY, str(BENCH_DIR / "_core_echo_server.py"), echo_socket]
        echo = start_proc("echo-floor", echo_argv, _clean_env(), tmp)
        echo.socket = echo_socket
        if before is not None:
            src = before / "meith_core" / "src"
            started.append(
                _start_serve(
                    tmp / "home-before", _entry_command(before), f"{src}{os.pathsep}{pythonpath}"
                )
            )
        echo.wait_for("listening")
        yield Setup(tmp, started[0], echo, started[1] if before is not None else None)
    finally:
        if echo is not None:
            echo.stop()
        for server in reversed(started):
            server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


# -- sequential latency -------------------------------------------------------------------


#: Before each repetition (the connections were warmed up once before the first).
WARMUP_CALLS = 5
FIRST_WARMUP_CALLS = 50


def sequential_sync(client: Any, calls: int, warmup: int = WARMUP_CALLS) -> list[float]:
    """Round trips of the blocking meith client (the path the CLI and scripts use)."""
    call = client.call_raw
    args = {"text": TEXT}
    for _ in range(warmup):
        call(TOOL, args)
    samples: list[float] = []
    clock = time.perf_counter
    for _ in range(calls):
        t0 = clock()
        result = call(TOOL, args)
        samples.append(clock() - t0)
        if result.get("ok") is not True:
            raise BenchError(f"{TOOL} failed: {result}")
    return samples


def sequential_alternating(meith: Any, echo: Any, plan: Plan) -> dict[str, list[float]]:
    """p50 per run (ms) of each sync client, their calls alternating one by one."""
    args = {"text": TEXT}
    out: dict[str, list[float]] = {"meith": [], "echo": []}
    clock = time.perf_counter
    for _ in range(plan.alt_runs):
        samples: dict[str, list[float]] = {"meith": [], "echo": []}
        for _ in range(plan.alt_calls):
            for name, client in (("meith", meith), ("echo", echo)):
                t0 = clock()
                result = client.call_raw(TOOL, args)
                samples[name].append(clock() - t0)
                if result.get("ok") is not True:
                    raise BenchError(f"{TOOL} failed: {result}")
        for name, values in samples.items():
            out[name].append(round(percentile(values, 50) * 1e3, 4))
    return out


async def sequential_async(
    call: Callable[[], Awaitable[bool]], calls: int, warmup: int = WARMUP_CALLS
) -> list[float]:
    for _ in range(warmup):
        await call()
    samples: list[float] = []
    clock = time.perf_counter
    for _ in range(calls):
        t0 = clock()
        ok = await call()
        samples.append(clock() - t0)
        if not ok:
            raise BenchError(f"{TOOL} failed")
    return samples


def meith_async_call(client: Any) -> Callable[[], Awaitable[bool]]:
    args = {"text": TEXT}

    async def call() -> bool:
        result = await client.call(TOOL, args)
        return bool(result.ok) and result.content == args

    return call


def mcp_call(session: Any) -> Callable[[], Awaitable[bool]]:
    args = {"text": TEXT}

    async def call() -> bool:
        result = await session.call_tool(TOOL, args)
        return not getattr(result, "is_error", getattr(result, "isError", False))

    return call


# -- throughput ---------------------------------------------------------------------------


def process_cpu_s(proc: psutil.Process) -> float:
    """CPU seconds of a process, to the nanosecond where Linux tells (`schedstat` of each of
    its threads); `cpu_times()` counts in 10 ms clock ticks, too coarse for a few hundred
    calls of a few hundred microseconds each."""
    try:
        total = 0
        for task in os.listdir(f"/proc/{proc.pid}/task"):
            with open(f"/proc/{proc.pid}/task/{task}/schedstat") as fh:
                total += int(fh.read().split()[0])
        return total / 1e9
    except (OSError, ValueError, IndexError):
        with contextlib.suppress(psutil.Error):
            t = proc.cpu_times()
            return float(t.user + t.system)
        return 0.0


@dataclass
class CpuMeter:
    """CPU seconds of the bench process and of a set of server processes over a window."""

    servers: list[psutil.Process]

    def __post_init__(self) -> None:
        self._t0 = time.perf_counter()
        self._self0 = time.process_time()
        self._srv0 = self._server_cpu()

    def _server_cpu(self) -> float:
        return sum(process_cpu_s(proc) for proc in self.servers)

    def per_call_us(self, calls: int) -> dict[str, float]:
        """CPU microseconds per call, of this process (the client) and of the servers."""
        return {
            "clientCpuUs": round((time.process_time() - self._self0) / calls * 1e6, 1),
            "serverCpuUs": round((self._server_cpu() - self._srv0) / calls * 1e6, 1),
        }

    def read(self) -> dict[str, float]:
        wall = time.perf_counter() - self._t0
        return {
            "clientCores": round((time.process_time() - self._self0) / wall, 2),
            "serverCores": round((self._server_cpu() - self._srv0) / wall, 2),
        }


def _throughput_row(rates: list[float], cpu: list[dict[str, float]]) -> dict[str, Any]:
    client = median([c["clientCores"] for c in cpu])
    server = median([c["serverCores"] for c in cpu])
    rate = median(rates)
    return {
        "callsPerS": rate,
        "perRep": [round(r, 1) for r in rates],
        "clientCores": client,
        "serverCores": server,
        # CPU per call is what decides throughput once the cores are saturated, and it does
        # not depend on how busy the shared machine was.
        "clientCpuUsPerCall": round(client / rate * 1e6, 1),
        "serverCpuUsPerCall": round(server / rate * 1e6, 1),
    }


async def run_window(calls: Sequence[Callable[[], Awaitable[bool]]], seconds: float) -> float:
    """Every connection calls back to back for `seconds`; completed calls per second."""
    clock = time.perf_counter
    start = clock()
    end = start + seconds
    counts = [0] * len(calls)

    async def worker(i: int, call: Callable[[], Awaitable[bool]]) -> None:
        n = 0
        while clock() < end:
            if not await call():
                raise BenchError(f"{TOOL} failed under load")
            n += 1
        counts[i] = n

    await asyncio.gather(*(worker(i, c) for i, c in enumerate(calls)))
    return sum(counts) / (clock() - start)


class RssSampler:
    """Samples a process's RSS from a thread; `peak` is the largest sample."""

    def __init__(self, pid: int, interval_s: float = 0.005) -> None:
        self._proc = psutil.Process(pid)
        self._interval = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.peak = 0
        self.samples = 0

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(psutil.Error):
                self.peak = max(self.peak, self._proc.memory_info().rss)
                self.samples += 1
            self._stop.wait(self._interval)

    def __enter__(self) -> RssSampler:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


def vm_hwm_bytes(pid: int) -> int | None:
    """The kernel's own peak-RSS figure for the process (since it started)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


# -- the MCP peer -------------------------------------------------------------------------


async def open_mcp_sessions(stack: contextlib.AsyncExitStack, count: int) -> list[Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=PY, args=[str(BENCH_DIR / "_core_mcp_server.py")], env=_clean_env()
    )
    sessions = []
    errlog = stack.enter_context(open(os.devnull, "w"))  # noqa: SIM115 - closed by the stack
    # Entered one by one (anyio cancel scopes must unwind in order); the servers' slow start
    # (importing the SDK) then overlaps in the concurrent initialize() below.
    for _ in range(count):
        read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
        sessions.append(await stack.enter_async_context(ClientSession(read, write)))
    await asyncio.gather(*(s.initialize() for s in sessions))
    return sessions


# -- CLI wall time ------------------------------------------------------------------------


def cli_commands() -> dict[str, list[str]]:
    typer_app = str(BENCH_DIR / "_core_typer_app.py")
    return {
        "python -c pass": [PY, "-c", "pass"],
        "typer app --help": [PY, typer_app, "--help"],
        "typer app (run its command)": [PY, typer_app, "--name", "x"],
        "meith --help": [MEITH, "--help"],
        "meith tools": [MEITH, "tools"],
        f"meith call {TOOL}": [MEITH, "call", TOOL, "--text", TEXT],
    }


# What each meith command is held against (at most 1.3x the minimal typer app).
CLI_BASELINE = {
    "meith --help": "typer app --help",
    "meith tools": "typer app (run its command)",
    f"meith call {TOOL}": "typer app (run its command)",
}


def time_command(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run. The CPU figure does not count the time other
    jobs on a shared machine held the cores, so it is the steadier of the two."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True)
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise BenchError(
            f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.decode()[-2000:]}"
        )
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def import_profile(argv: list[str], env: dict[str, str], top: int = 8) -> list[dict[str, Any]]:
    """The heaviest top-level imports of a command (`-X importtime`, cumulative us)."""
    if argv[0] == MEITH:
        argv = [PY, MEITH, *argv[1:]]
    proc = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]], env=env, capture_output=True, text=True
    )
    rows: list[dict[str, Any]] = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _self, cumulative, name = line[len("import time:") :].split("|")
        if not cumulative.strip().isdigit():
            continue
        if name.startswith(" ") and not name.startswith("  "):  # top level only
            rows.append({"module": name.strip(), "cumulativeMs": int(cumulative) / 1000})
    rows.sort(key=lambda r: -r["cumulativeMs"])
    return rows[:top]


# -- the run ------------------------------------------------------------------------------


def _print(text: str = "") -> None:
    print(text, flush=True)


async def measure(plan: Plan, setup: Setup, mcp_64: bool) -> dict[str, Any]:
    from meith_core.client import AsyncClient, Client

    serve_proc = psutil.Process(setup.serve.pid)
    echo_proc = psutil.Process(setup.echo.pid)
    results: dict[str, Any] = {}
    paths = {"meith": setup.meith_socket, "echo": setup.echo_socket}
    if setup.before is not None:
        paths["before"] = setup.before.socket
    async with contextlib.AsyncExitStack() as stack:
        # Connections are opened once and reused: connection set-up is not what is measured.
        sync_clients = {name: stack.enter_context(Client(path)) for name, path in paths.items()}
        aclients: dict[str, list[Any]] = {name: [] for name in paths}
        for name, path in paths.items():
            for _ in range(max(CONCURRENCY)):
                aclients[name].append(
                    await stack.enter_async_context(await AsyncClient.connect(path))
                )
        peer_sessions = max(CONCURRENCY) if mcp_64 else plan.peer_sessions
        _print(f"starting {peer_sessions} MCP SDK stdio servers ...")
        t0 = time.perf_counter()
        sessions = await open_mcp_sessions(stack, peer_sessions)
        results["peerStartupS"] = round(time.perf_counter() - t0, 2)
        ours = setup.pids
        peer_children = [c for c in psutil.Process().children() if c.pid not in ours]
        rss_idle = serve_proc.memory_info().rss

        # 1. sequential latency
        _print("sequential latency ...")
        seq_targets = ["meith", "echo", "peer", "meith-async", "echo-async"]
        servers_of = {"meith": [serve_proc], "echo": [echo_proc], "peer": peer_children}
        if "before" in paths:
            seq_targets += ["before", "before-async"]
            servers_of["before"] = [psutil.Process(setup.before.pid)]
        per_rep: dict[str, list[dict[str, float]]] = {t: [] for t in seq_targets}
        all_samples: dict[str, list[float]] = {t: [] for t in seq_targets}
        for name, client in sync_clients.items():
            sequential_sync(client, 0, warmup=FIRST_WARMUP_CALLS)
            await sequential_async(meith_async_call(aclients[name][0]), 0, FIRST_WARMUP_CALLS)
        await sequential_async(mcp_call(sessions[0]), 0, FIRST_WARMUP_CALLS)
        for rep in range(plan.lat_reps):
            for target in rotated(seq_targets, rep):
                meter = CpuMeter(servers_of[target.removesuffix("-async")])
                if target in paths:
                    samples = await asyncio.to_thread(
                        sequential_sync, sync_clients[target], plan.lat_calls
                    )
                elif target == "peer":
                    samples = await sequential_async(mcp_call(sessions[0]), plan.lat_calls_peer)
                else:
                    base = target.removesuffix("-async")
                    samples = await sequential_async(
                        meith_async_call(aclients[base][0]), plan.lat_calls
                    )
                per_rep[target].append(
                    {
                        "p50": percentile(samples, 50) * 1e3,
                        "p99": percentile(samples, 99) * 1e3,
                        **meter.per_call_us(len(samples) + WARMUP_CALLS),
                    }
                )
                all_samples[target].extend(samples)
        results["latencyMs"] = {
            t: {
                "p50": median([r["p50"] for r in per_rep[t]]),
                # A repetition holds too few calls for its own p99: pooled over all of them.
                "p99": percentile(all_samples[t], 99) * 1e3,
                "p50BestRep": min(r["p50"] for r in per_rep[t]),
                "p50PerRep": [round(r["p50"], 4) for r in per_rep[t]],
                "serverCpuUsPerCall": median([r["serverCpuUs"] for r in per_rep[t]]),
                "clientCpuUsPerCall": median([r["clientCpuUs"] for r in per_rep[t]]),
                "calls": len(all_samples[t]),
            }
            for t in seq_targets
        }

        # 1b. the issue-36 method: the same sync clients, meith's and the floor's calls
        # alternating one by one (no block of one target between the other's), p50 per run.
        _print("sequential latency, alternating ...")
        alternating = await asyncio.to_thread(
            sequential_alternating, sync_clients["meith"], sync_clients["echo"], plan
        )
        results["alternatingP50Ms"] = alternating

        # 2. throughput (and the runtime's RSS during the 64-connection runs)
        _print("throughput ...")
        thr: dict[str, dict[int, list[float]]] = {t: {} for t in [*paths, "peer"]}
        cpu: dict[str, dict[int, list[dict[str, float]]]] = {t: {} for t in thr}
        sampler = RssSampler(setup.serve.pid)
        for rep in range(plan.thr_reps):
            for conc in CONCURRENCY:
                for target in rotated(list(thr), rep):
                    if target == "peer":
                        if conc > len(sessions):
                            continue
                        calls = [mcp_call(s) for s in sessions[:conc]]
                    else:
                        calls = [meith_async_call(c) for c in aclients[target][:conc]]
                    await run_window(calls, plan.thr_warmup_s)
                    meter = CpuMeter(servers_of[target])
                    if target == "meith" and conc == max(CONCURRENCY):
                        with sampler:
                            rate = await run_window(calls, plan.thr_window_s)
                    else:
                        rate = await run_window(calls, plan.thr_window_s)
                    thr[target].setdefault(conc, []).append(rate)
                    cpu[target].setdefault(conc, []).append(meter.read())
        results["throughput"] = {
            t: {str(conc): _throughput_row(rates, cpu[t][conc]) for conc, rates in thr[t].items()}
            for t in thr
        }
        results["rss"] = {
            "idleMiB": rss_idle / 2**20,
            "peak64MiB": sampler.peak / 2**20,
            "samples": sampler.samples,
            "vmHwmMiB": (vm_hwm_bytes(setup.serve.pid) or 0) / 2**20,
        }
    return results


def measure_cli(plan: Plan, setup: Setup) -> dict[str, Any]:
    _print("CLI wall time ...")
    commands = cli_commands()
    # Sanity: the command really calls the tool through the runtime.
    check = subprocess.run(
        [MEITH, "call", TOOL, "--text", TEXT, "--json"],
        env=setup.cli_env,
        capture_output=True,
        text=True,
    )
    envelope = json.loads(check.stdout or "{}")
    if envelope.get("ok") is not True or envelope.get("content") != {"text": TEXT}:
        raise BenchError(f"meith call {TOOL} did not echo: {check.stdout} {check.stderr}")
    for argv in commands.values():  # warm the page cache and .pyc files
        time_command(argv, setup.cli_env)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for rep in range(plan.cli_reps):
        for name in rotated(list(commands), rep):
            times[name].append(time_command(commands[name], setup.cli_env))
    out: dict[str, Any] = {
        name: {
            "ms": median([w for w, _ in ts]) * 1e3,
            "cpuMs": median([c for _, c in ts]) * 1e3,
            "perRep": [round(w * 1e3, 1) for w, _ in ts],
        }
        for name, ts in times.items()
    }
    for name in CLI_BASELINE:
        out[name]["topImports"] = import_profile(commands[name], setup.cli_env)
    return out


def evaluate(results: dict[str, Any], mcp_64: bool) -> list[dict[str, Any]]:
    lat = results["latencyMs"]
    thr = results["throughput"]
    targets: list[dict[str, Any]] = []

    def add(name: str, value: float, limit: float, ok: bool, note: str = "") -> None:
        targets.append(
            {"target": name, "value": round(value, 2), "limit": limit, "pass": ok, "note": note}
        )

    def best(a: str, b: str, ok: Callable[[float], bool], verdict: bool) -> str:
        # The least disturbed repetitions: when they disagree with the medians, the verdict
        # is the machine's load talking (the MCP peer slows down far more under contention).
        r = lat[a]["p50BestRep"] / lat[b]["p50BestRep"]
        flag = "" if ok(r) == verdict else " - a different verdict: it depends on machine load"
        return f"best repetitions: {r:.2f}x ({'PASS' if ok(r) else 'MISS'}){flag}"

    def within_floor(r: float) -> bool:
        return r <= FLOOR_MAX_RATIO

    def beats_peer(r: float) -> bool:
        return r >= PEER_MIN_SPEEDUP

    ratio = lat["meith"]["p50"] / lat["echo"]["p50"]
    add("p50 within 2.5x of the echo floor (sync client)", ratio, FLOOR_MAX_RATIO,
        within_floor(ratio), best("meith", "echo", within_floor, within_floor(ratio)))  # fmt: skip
    alt = results["alternatingP50Ms"]
    ratios = [m / e for m, e in zip(alt["meith"], alt["echo"], strict=True)]
    add("p50 within 2.0x of the echo floor, calls alternating (sync client, worst run)",
        max(ratios), ALTERNATING_MAX_RATIO, max(ratios) <= ALTERNATING_MAX_RATIO,
        "runs: " + ", ".join(f"{r:.2f}x" for r in ratios))  # fmt: skip
    ratio_a = lat["meith-async"]["p50"] / lat["echo-async"]["p50"]
    add("p50 within 2.5x of the echo floor (async client)", ratio_a, FLOOR_MAX_RATIO,
        within_floor(ratio_a),
        best("meith-async", "echo-async", within_floor, within_floor(ratio_a)))  # fmt: skip
    cpu = lat["meith"]["serverCpuUsPerCall"]
    targets.append(
        {
            "target": "runtime CPU per trivial call (sync client, us)",
            "value": round(cpu, 1),
            "limit": SERVER_CPU_MAX_US,
            "pass": cpu < SERVER_CPU_MAX_US,
            "note": f"echo floor's server: {lat['echo']['serverCpuUsPerCall']:.0f} us",
            "unit": "us",
        }
    )
    speedup = lat["peer"]["p50"] / lat["meith"]["p50"]
    add("p50 >= 5x faster than the MCP SDK peer", speedup, PEER_MIN_SPEEDUP, beats_peer(speedup),
        best("peer", "meith", beats_peer, beats_peer(speedup)))  # fmt: skip
    top = str(max(CONCURRENCY))
    peer_thr = thr["peer"]
    if top in peer_thr:
        peer_rate, note = peer_thr[top]["callsPerS"], ""
    else:
        best = max(peer_thr, key=lambda c: peer_thr[c]["callsPerS"])
        peer_rate = peer_thr[best]["callsPerS"]
        note = (
            f"peer not run at {top} sessions (--mcp-64 does); compared with its best measured "
            f"figure ({best} sessions)"
        )
    tratio = thr["meith"][top]["callsPerS"] / peer_rate
    peer_row = peer_thr[top] if top in peer_thr else peer_thr[best]
    cpu_ratio = (peer_row["clientCpuUsPerCall"] + peer_row["serverCpuUsPerCall"]) / (
        thr["meith"][top]["clientCpuUsPerCall"] + thr["meith"][top]["serverCpuUsPerCall"]
    )
    floor_ratio = thr["echo"][top]["callsPerS"] / peer_rate
    note = "; ".join(
        p
        for p in (
            note,
            f"client+server CPU per call: peer {cpu_ratio:.1f}x meith's",
            f"the echo floor with the same client reaches {floor_ratio:.1f}x",
        )
        if p
    )
    add(f"{top}-connection throughput >= 20x the peer's", tratio, PEER_MIN_THROUGHPUT_RATIO,
        tratio >= 20, note)  # fmt: skip
    cli = results["cliMs"]
    for name, base in CLI_BASELINE.items():
        r = cli[name]["ms"] / cli[base]["ms"]
        cpu_r = cli[name]["cpuMs"] / cli[base]["cpuMs"]
        add(f"{name} <= 1.3x {base}", r, CLI_MAX_RATIO, r <= CLI_MAX_RATIO,
            f"wall time; in CPU time {cpu_r:.2f}x")  # fmt: skip
    return targets


def report(results: dict[str, Any]) -> None:
    lat, thr, cli, rss = (
        results["latencyMs"],
        results["throughput"],
        results["cliMs"],
        results["rss"],
    )
    env = results["environment"]
    _print()
    _print(
        f"meith core benchmark - python {env['python']}, mcp {env['mcp']}, {env['cpus']} CPUs, "
        f"load {env['loadBefore']} -> {env['loadAfter']}"
    )
    _print(
        f"other processes used {env['foreignCores']} of {env['cpus']} cores on average while "
        "this ran"
        + (" - a busy machine: expect noisy figures" if env["foreignCores"] > 0.3 else "")
    )
    _print()
    _print(
        f"{'Sequential round trip of bench_echo':<44}{'p50 ms':>8}{'best rep':>9}{'p99 ms':>9}"
        f"{'calls':>7}{'CPU us/call client':>20}{'server':>8}"
    )
    labels = {
        "echo": "echo floor, meith sync Client",
        "meith": "meith serve, meith sync Client",
        "echo-async": "echo floor, meith AsyncClient",
        "meith-async": "meith serve, meith AsyncClient",
        "peer": "MCP SDK stdio, SDK client",
        "before": "meith serve --before, sync Client",
        "before-async": "meith serve --before, AsyncClient",
    }
    for key, label in labels.items():
        if key not in lat:
            continue
        row = lat[key]
        _print(
            f"  {label:<42}{row['p50']:>8.3f}{row['p50BestRep']:>9.3f}{row['p99']:>9.3f}"
            f"{row['calls']:>7}"
            f"{row['clientCpuUsPerCall']:>20.0f}{row['serverCpuUsPerCall']:>8.0f}"
        )
    _print()
    _print("Throughput (calls/s; cores used client/server)  " + "".join(
        f"{c:>10} conn" for c in CONCURRENCY
    ))  # fmt: skip
    rows = [("echo", "echo floor"), ("meith", "meith serve"), ("peer", "MCP SDK peer")]
    if "before" in thr:
        rows.append(("before", "meith serve --before"))
    for key, label in rows:
        cells = []
        for conc in CONCURRENCY:
            cell = thr[key].get(str(conc))
            cells.append(f"{cell['callsPerS']:>15.0f}" if cell else f"{'not run':>15}")
        _print(f"  {label:<46}" + "".join(cells))
        cores = []
        for conc in CONCURRENCY:
            cell = thr[key].get(str(conc))
            cores.append(
                f"{cell['clientCores']:>9.2f}/{cell['serverCores']:<5.2f}" if cell else " " * 15
            )
        _print(f"  {'':<46}" + "".join(cores))
    _print()
    _print(f"{'CLI (median of runs)':<46}{'wall ms':>8}{'CPU ms':>8}")
    for name, row in cli.items():
        _print(f"  {name:<44}{row['ms']:>8.1f}{row['cpuMs']:>8.1f}")
    _print()
    _print(
        f"Runtime RSS: idle {rss['idleMiB']:.1f} MiB; peak during the 64-connection runs "
        f"{rss['peak64MiB']:.1f} MiB ({rss['samples']} samples; kernel VmHWM "
        f"{rss['vmHwmMiB']:.1f} MiB)"
    )
    _print()
    _print("Targets")
    for t in results["targets"]:
        mark = "PASS" if t["pass"] else "MISS"
        unit = t.get("unit", "x")
        _print(
            f"  [{mark}] {t['target']:<58} {t['value']:>7.2f}{unit} (limit {t['limit']:g}{unit})"
        )
        if t["note"]:
            _print(f"         {t['note']}")
    _print()
    _print(f"JSON: {RESULTS_PATH}")


def profile_run(calls: int, top: int = 30) -> None:
    """Diagnosis: the runtime under cProfile."""
    out = RESULTS_PATH.with_name("core_profile.prof")
    out.parent.mkdir(parents=True, exist_ok=True)
    text = cprofile_serve(calls, out, top)
    report_path = RESULTS_PATH.with_name("core_profile.txt")
    report_path.write_text("\n".join(text) + "\n")
    _print("\n".join(text))
    _print(f"profile: {out} (pstats), {report_path}")


def cprofile_serve(calls: int, out: Path, top: int) -> list[str]:
    """`meith serve` under cProfile (CPU clock): sequential calls then 64-connection load.

    cProfile's per-function overhead (a CPU-clock read per event) inflates everything many
    times over: read the shares, not the microseconds (the benchmark gives those).
    """
    import io
    import pstats

    from meith_core.client import AsyncClient, Client

    prefix = [PY, str(BENCH_DIR / "_core_profile_serve.py"), str(out)]
    with servers(serve_prefix=prefix) as setup:
        with Client(setup.meith_socket) as client:
            sequential_sync(client, calls)

        async def load() -> int:
            clients = [await AsyncClient.connect(setup.meith_socket) for _ in range(64)]
            rate = await run_window([meith_async_call(c) for c in clients], 2.0)
            for c in clients:
                await c.aclose()
            return int(rate * 2.0)

        total = calls + WARMUP_CALLS + asyncio.run(load())
    stats = pstats.Stats(str(out))
    buf = io.StringIO()
    stats.stream = buf  # type: ignore[attr-defined]
    stats.sort_stats("tottime").print_stats(top)
    raw: dict[tuple[str, int, str], Any] = stats.stats  # type: ignore[attr-defined]
    loop_total = next(
        (ct for (f, _l, n), (*_x, ct, _c) in raw.items() if n == "_run_once"), float("nan")
    )
    text = [
        f"meith serve under cProfile (CPU clock): about {total} calls, sequential then 64 "
        "connections",
        "share of the event loop's time (BaseEventLoop._run_once, cumulative) per function:",
    ]
    # Found by file, not by name, so renaming a function never breaks the report.
    ours = sorted(
        (
            (ct, nc, file, name)
            for (file, _line, name), (_cc, nc, _tt, ct, _callers) in raw.items()
            if "meith_core" in file and nc >= total / 100
        ),
        reverse=True,
    )
    for ct, nc, file, name in ours[:top]:
        where = f"{Path(file).parent.name}/{Path(file).name}:{name}"
        text.append(f"  {where:<52}{ct / loop_total * 100:>6.1f}%   {nc / total:>5.2f} per call")
    text.append(buf.getvalue())
    return text


class ForeignLoad:
    """How much CPU other processes used while the benchmark ran: the figures are only as
    good as the machine was quiet (on a shared machine it often is not)."""

    def __init__(self) -> None:
        self._t0 = time.perf_counter()
        self._busy0 = self._busy()
        self._ours0 = self._ours()

    @staticmethod
    def _busy() -> float:
        t = psutil.cpu_times()
        return float(t.user + t.nice + t.system + getattr(t, "irq", 0) + getattr(t, "softirq", 0))

    @staticmethod
    def _ours() -> float:
        # This process, plus every child it started and has reaped (servers, peers, CLI runs):
        # call it once all of them have exited.
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return time.process_time() + kids.ru_utime + kids.ru_stime

    def cores(self) -> float:
        wall = time.perf_counter() - self._t0
        foreign = (self._busy() - self._busy0) - (self._ours() - self._ours0)
        return round(max(0.0, foreign) / wall, 2)


def environment() -> dict[str, Any]:
    def version(dist: str) -> str | None:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return None

    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "mcp": version("mcp"),
        "typer": version("typer"),
        "meithCore": version("meith-core"),
        "loadBefore": round(os.getloadavg()[0], 2),
        "droppedFromChildEnv": sorted(k for k in os.environ if k.startswith(_DROPPED_ENV)),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument(
        "--mcp-64", action="store_true", help="also run the MCP peer with 64 stdio sessions (slow)"
    )
    parser.add_argument(
        "--before",
        type=Path,
        metavar="SRC",
        help="also measure a runtime importing meith_core from SRC/meith_core/src (before/after)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="instead of the benchmark: profile `meith serve` (cProfile) under the same load",
    )
    args = parser.parse_args(argv)
    if args.profile:
        profile_run(calls=1000 if args.quick else 3000)
        return 0
    plan = Plan.quick() if args.quick else Plan()
    if importlib.util.find_spec("mcp") is None:
        _print("bench_core.py needs the `mcp` package; `nox -s bench -- core` installs and runs it")
        return 2
    started = time.perf_counter()
    results: dict[str, Any] = {"environment": environment(), "plan": plan.__dict__}
    foreign = ForeignLoad()
    with servers(before=args.before) as setup:
        results.update(asyncio.run(measure(plan, setup, args.mcp_64)))
        results["cliMs"] = measure_cli(plan, setup)
    results["environment"]["foreignCores"] = foreign.cores()
    results["environment"]["loadAfter"] = round(os.getloadavg()[0], 2)
    results["targets"] = evaluate(results, args.mcp_64)
    results["wallS"] = round(time.perf_counter() - started, 1)
    RESULTS_PATH.parent.mkdir(parents=True, exist_ok=True)
    RESULTS_PATH.write_text(json.dumps(results, indent=2) + "\n")
    report(results)
    _print(f"total {results['wallS']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
