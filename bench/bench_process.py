"""Live dev-server logs: lines per second delivered to `meith devlogs`, against a raw pipe.

A generator (a stand-in for a chatty dev server) writes N lines as fast as it can once a trigger
file appears. Measured in the same run, interleaved round by round, medians of the repetitions:

- raw pipe:   `python gen.py N | cat > /dev/null`; trigger -> the pipeline exited.
- devlogs:    the generator started as a dev server by a real `meith serve` (process plugin
              only) with one real `meith devlogs --id ...` attached; trigger -> the client printed
              the generator's last line. Every line is checked to arrive once, in order.
- in-process: the same through `Runtime.call("attach_process_logs")` with a counting event sink
              (no socket, no CLI): the plugin and the registry's event path alone.

Wall-clock rates on a shared machine also count time other jobs held the cores, so CPU seconds
are recorded too (runtime, client, generator + cat) and turned into lines per CPU-second: what
each side costs per line, independent of the load. The load average is recorded with the run.

Memory: the runtime's peak RSS (sampled every 5 ms) with a client attached at N and 10 N lines,
and with no client at N and 10 N (only the ring buffer of 5,000 lines per process holds them).

    python bench/bench_process.py [--quick] [--lines N] [--reps R]

Writes bench/results/process.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from _launch import MEITH, MeithServer, serve  # bench/ is the script's directory: sys.path[0]

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "process.json"

END = "END-OF-BENCH"
MIB = 1024 * 1024

GENERATOR = r"""
import os, sys, time
n, trigger = int(sys.argv[1]), sys.argv[2]
print("ready", flush=True)
while not os.path.exists(trigger):
    time.sleep(0.002)
out = sys.stdout.buffer
block = 1000
for start in range(0, n, block):
    out.write("".join(
        f"line {i:07d} the quick brown fox jumps over the lazy dog\n"
        for i in range(start, min(n, start + block))
    ).encode())
out.write(b"END-OF-BENCH\n")
out.flush()
if len(sys.argv) > 3:
    time.sleep(3600)
"""


def cpu_s(proc: psutil.Process) -> float:
    with contextlib.suppress(psutil.Error):
        t = proc.cpu_times()
        return t.user + t.system
    return 0.0


def children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class Server:
    """A real `meith serve` (process plugin only), approved and granted for the CLI."""

    def __init__(self, work: Path) -> None:
        self.serve: MeithServer = serve(work, plugins="process", grant=("starts-process",))
        self.cli_env = self.serve.cli_env
        self.ps = psutil.Process(self.serve.pid)

    def call(self, tool: str, args: dict[str, Any]) -> Any:
        return self.serve.content(tool, args)

    def stop(self) -> None:
        self.serve.stop()

    def start_generator(self, work: Path, n: int, trigger: Path) -> dict[str, Any]:
        return self.call(
            "start_dev_server",
            {
                "cwd": str(work),
                "command": sys.executable,
                "args": [str(work / "gen.py"), str(n), str(trigger), "stay"],
            },
        )


class PeakRss:
    """Samples a process's RSS every 5 ms on a thread."""

    def __init__(self, proc: psutil.Process) -> None:
        self.proc = proc
        self.peak = proc.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            try:
                self.peak = max(self.peak, self.proc.memory_info().rss)
            except psutil.Error:
                return

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


@dataclass
class Run:
    seconds: float
    lines: int
    cpu: dict[str, float] = field(default_factory=dict)
    peak_rss: int = 0
    dropped: str | None = None


def raw_pipe(work: Path, n: int) -> Run:
    trigger = work / f"go-raw-{time.monotonic_ns()}"
    before = children_cpu_s()
    pipeline = subprocess.Popen(
        ["/bin/sh", "-c", f"{sys.executable} {work / 'gen.py'} {n} {trigger} | cat > /dev/null"],
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    # "ready" went to cat; wait for the generator to be up by its process instead.
    shell = psutil.Process(pipeline.pid)
    while not any("gen.py" in " ".join(c.cmdline()) for c in shell.children()):
        time.sleep(0.005)
    time.sleep(0.05)
    t0 = time.perf_counter()
    trigger.touch()
    pipeline.wait()
    elapsed = time.perf_counter() - t0
    return Run(elapsed, n, {"pipe (sh, generator, cat)": children_cpu_s() - before})


def via_devlogs(server: Server, work: Path, n: int) -> Run:
    trigger = work / f"go-{time.monotonic_ns()}"
    dev = server.start_generator(work, n, trigger)
    gen = psutil.Process(dev["pid"])
    client = subprocess.Popen(
        [MEITH, "devlogs", "--id", dev["id"], "--quiet"],
        env=server.cli_env,
        stdout=subprocess.PIPE,
        bufsize=1 << 20,
    )
    assert client.stdout is not None
    client_ps = psutil.Process(client.pid)
    expected = 0
    try:
        while (first := client.stdout.readline()) != b"ready\n":
            if not first:
                raise RuntimeError("devlogs ended before the generator was ready")
        cpu0 = {"runtime": cpu_s(server.ps), "client": cpu_s(client_ps), "generator": cpu_s(gen)}
        rss = PeakRss(server.ps)
        t0 = time.perf_counter()
        trigger.touch()
        dropped = None
        # Every line must arrive, once, in order.
        for raw in client.stdout:
            if raw.startswith(b"line "):
                seq = int(raw[5:12])
                if seq != expected:
                    raise RuntimeError(f"line {expected} expected, got {raw!r}")
                expected += 1
            elif raw.rstrip() == END.encode():
                break
        else:
            dropped = f"devlogs ended after {expected:,} of {n:,} lines (exit {client.wait()})"
        elapsed = time.perf_counter() - t0
        cpu = {
            "runtime": cpu_s(server.ps) - cpu0["runtime"],
            "client": cpu_s(client_ps) - cpu0["client"],
            "generator": cpu_s(gen) - cpu0["generator"],
        }
        return Run(elapsed, expected, cpu, rss.stop(), dropped)
    finally:
        client.terminate()
        client.wait()
        server.call("stop_dev_server", {"devServerId": dev["id"]})


def unattended(server: Server, work: Path, n: int) -> Run:
    """No client: the lines only go into the ring buffer. Returns the runtime's peak RSS."""
    trigger = work / f"go-solo-{time.monotonic_ns()}"
    dev = server.start_generator(work, n, trigger)
    time.sleep(0.3)
    rss = PeakRss(server.ps)
    t0 = time.perf_counter()
    trigger.touch()
    deadline = time.monotonic() + 300
    while True:
        logs = server.call("get_process_logs", {"processId": dev["id"], "limit": 1})["logs"]
        if logs and logs[-1]["text"] == END:
            break
        if time.monotonic() > deadline:
            raise RuntimeError("the generator did not finish")
        time.sleep(0.05)
    elapsed = time.perf_counter() - t0
    server.call("stop_dev_server", {"devServerId": dev["id"]})
    return Run(elapsed, n, peak_rss=rss.stop())


async def _in_process(work: Path, n: int) -> Run:
    from meith_core import CancelToken, MeithHome, Runtime
    from meith_plugins_process.plugin import Plugin

    rt = Runtime(MeithHome(work / f"home-inproc-{time.monotonic_ns()}"), load_plugins=False)
    await rt.start()
    try:
        rt.load_plugin("process", Plugin)
        rt.approve_plugin("process")
        trigger = work / f"go-in-{time.monotonic_ns()}"
        args = [str(work / "gen.py"), str(n), str(trigger), "stay"]
        dev = (
            await rt.call(
                "start_dev_server", {"cwd": str(work), "command": sys.executable, "args": args}
            )
        ).content
        ready, done = asyncio.Event(), asyncio.Event()
        count = [0]

        def sink(event: dict[str, Any]) -> None:
            # A log event carries one line or several joined by newlines.
            for msg in event["message"].split("\n"):
                if msg.startswith("line "):
                    count[0] += 1
                elif msg == "ready":
                    ready.set()
                elif msg == END:
                    done.set()

        cancel = CancelToken()
        task = asyncio.ensure_future(
            rt.call("attach_process_logs", {"devServerId": dev["id"]}, on_event=sink, cancel=cancel)
        )
        await ready.wait()
        me, gen = psutil.Process(), psutil.Process(dev["pid"])
        cpu0 = (cpu_s(me), cpu_s(gen))
        t0 = time.perf_counter()
        trigger.touch()
        await done.wait()
        elapsed = time.perf_counter() - t0
        cpu = {"runtime": cpu_s(me) - cpu0[0], "generator": cpu_s(gen) - cpu0[1]}
        cancel.cancel()
        await task
        if count[0] != n:
            raise RuntimeError(f"in-process: {count[0]} of {n} lines")
        return Run(elapsed, n, cpu)
    finally:
        await rt.aclose()


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def summarise(runs: list[Run]) -> dict[str, Any]:
    lines = runs[0].lines if runs else 0
    out: dict[str, Any] = {
        "lines_per_s": median([r.lines / r.seconds for r in runs]),
        "seconds": [round(r.seconds, 4) for r in runs],
    }
    for key in runs[0].cpu if runs else ():
        per_line_us = median([r.cpu[key] / max(1, r.lines) * 1e6 for r in runs])
        out[f"cpu_us_per_line[{key}]"] = per_line_us
    if any(r.peak_rss for r in runs):
        out["peak_rss_mib"] = max(r.peak_rss for r in runs) / MIB
    dropped = [r.dropped for r in runs if r.dropped]
    if dropped:
        out["dropped"] = dropped
    out["lines"] = lines
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="2 repetitions of 20,000 lines")
    opts = parser.parse_args()
    n, reps = (20_000, 2) if opts.quick else (opts.lines, opts.reps)
    big = n * 10

    work = Path(tempfile.mkdtemp(prefix="meith-bench-", dir="/tmp"))
    (work / "gen.py").write_text(GENERATOR)
    load_before = os.getloadavg()
    server = Server(work)
    raw: list[Run] = []
    dev: list[Run] = []
    inproc: list[Run] = []
    try:
        idle_rss = server.ps.memory_info().rss
        for _ in range(reps):  # interleaved: every round measures every variant once
            raw.append(raw_pipe(work, n))
            dev.append(via_devlogs(server, work, n))
            inproc.append(asyncio.run(_in_process(work, n)))
        solo = unattended(server, work, n)
        solo_big = unattended(server, work, big)
        raw_big = raw_pipe(work, big)
        dev_big = via_devlogs(server, work, big)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()

    raw_s, dev_s, in_s = summarise(raw), summarise(dev), summarise(inproc)
    result = {
        "lines": n,
        "repetitions": reps,
        "raw_pipe": raw_s,
        "devlogs": dev_s,
        "in_process": in_s,
        "devlogs_vs_raw_pipe": dev_s["lines_per_s"] / raw_s["lines_per_s"],
        "in_process_vs_raw_pipe": in_s["lines_per_s"] / raw_s["lines_per_s"],
        "memory": {
            "runtime_idle_rss_mib": idle_rss / MIB,
            "no_client_peak_rss_mib": {
                str(n): solo.peak_rss / MIB,
                str(big): solo_big.peak_rss / MIB,
            },
            "devlogs_peak_rss_mib": {
                str(n): dev_s.get("peak_rss_mib"),
                str(big): dev_big.peak_rss / MIB,
            },
        },
        "lines_10x": {
            "raw_pipe_lines_per_s": big / raw_big.seconds,
            "devlogs_lines_per_s": dev_big.lines / dev_big.seconds,
            "devlogs_lines_delivered": dev_big.lines,
            "devlogs_dropped": dev_big.dropped,
        },
        "load_average": {"before": load_before, "after": load_after},
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")

    def row(name: str, s: dict[str, Any], ratio: float | None) -> None:
        cpu = ", ".join(
            f"{k[len('cpu_us_per_line[') : -1]} {v:.1f}"
            for k, v in s.items()
            if k.startswith("cpu_us_per_line[")
        )
        share = f"{ratio:6.1%} of raw" if ratio is not None else " " * 13
        print(f"  {name:34} {s['lines_per_s']:>11,.0f} lines/s  {share}   CPU us/line: {cpu}")

    print(
        f"process logs: {n:,} lines, median of {reps}; load average {load_before[0]:.1f} -> {load_after[0]:.1f} on {os.cpu_count()} CPUs"
    )
    row("raw pipe | cat > /dev/null", raw_s, None)
    row("meith devlogs (serve + CLI)", dev_s, result["devlogs_vs_raw_pipe"])
    row("in-process attach (no socket)", in_s, result["in_process_vs_raw_pipe"])
    mem = result["memory"]
    print(
        f"  runtime RSS: idle {mem['runtime_idle_rss_mib']:.1f} MiB; no client: "
        f"{solo.peak_rss / MIB:.1f} MiB at {n:,} lines, {solo_big.peak_rss / MIB:.1f} MiB at {big:,}; "
        f"devlogs attached: {dev_s.get('peak_rss_mib', 0):.1f} MiB at {n:,}, "
        f"{dev_big.peak_rss / MIB:.1f} MiB at {big:,}"
    )
    ten = result["lines_10x"]
    print(
        f"  {big:,} lines: raw {ten['raw_pipe_lines_per_s']:,.0f} lines/s, devlogs "
        f"{ten['devlogs_lines_per_s']:,.0f} lines/s ({ten['devlogs_lines_delivered']:,} delivered)"
        + (f"; {dev_big.dropped}" if dev_big.dropped else "")
    )
    print(f"  -> {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
