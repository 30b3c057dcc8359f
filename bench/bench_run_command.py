"""run_command of `true` through a real `meith serve` against `subprocess.run(["true"])`, in
the same run, interleaved round-robin, minimum and median of the wall time per command.

- raw:        `subprocess.run(["true"], capture_output=True)` from this process
- unconfined: `run_command {command: ["true"]}` over the Unix socket with the Python client
              (full pipeline: validation, permissions, audit), a standing cli grant for
              starts-process with no directory
- floor:      `list_dev_servers` (read-only, no process) over the same socket: the round trip
              and pipeline alone, for the breakdown
- confined:   the same through a second `meith serve` whose grant is limited to the directory
              (`meith grants add --cwd DIR`): the command runs under Landlock through the exec
              wrapper (about one Python start-up more: bench/bench_confine.py)

The target for the unconfined figure is at most 15 ms above raw; the confined one is reported
beside it.

    python bench/bench_run_command.py [--rounds N] [--quick]

Writes bench/results/run_command.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _launch import ROOT, MeithServer  # bench/ is the script's directory: sys.path[0]

RESULTS = ROOT / "bench" / "results" / "run_command.json"
TARGET_EXTRA_MS = 15.0


def start(home: Path, cwd: str | None) -> MeithServer:
    server = MeithServer(home, plugins="process")
    server.approve("process")
    server.grant("starts-process", cwd=cwd)
    return server


def timed(fn: Callable[[], None]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="10 rounds (a smoke run)")
    opts = parser.parse_args()
    rounds = 10 if opts.quick else opts.rounds

    from meith_core import landlock_status
    from meith_core.client import Client

    work = Path(tempfile.mkdtemp(prefix="meith-bench-run-"))
    project = work / "project"
    project.mkdir()
    servers: list[MeithServer] = []
    clients: list[Any] = []
    try:
        servers.append(start(work / "home-unconfined", None))
        confining = landlock_status().available
        if confining:
            servers.append(start(work / "home-confined", str(project)))
        clients = [Client(s.socket, cwd=str(project)) for s in servers]
        args = {"cwd": str(project), "command": ["true"]}

        def via(client: Any, confined: bool) -> Callable[[], None]:
            def call() -> None:
                res = client.call_raw("run_command", args)
                assert res["ok"], res
                content = res["content"]
                assert content["exitCode"] == 0, content
                assert (content["confinedTo"] is not None) == confined, content

            return call

        def raw() -> None:
            subprocess.run(["true"], capture_output=True, check=True)

        def floor() -> None:
            assert clients[0].call_raw("list_dev_servers", {})["ok"]

        items: dict[str, Callable[[], None]] = {
            "raw": raw,
            "floor": floor,
            "unconfined": via(clients[0], False),
        }
        if confining:
            items["confined"] = via(clients[1], True)
        for fn in items.values():  # warm-up: imports, first spawn, first audit segment
            for _ in range(3):
                fn()
        times: dict[str, list[float]] = {k: [] for k in items}
        for _ in range(rounds):
            for name, fn in items.items():
                times[name].append(timed(fn))
    finally:
        for client in clients:
            client.close()
        for server in servers:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    if not confining:
        print(f"confined: not measured ({landlock_status().describe()})")
    return report(times, rounds)


def report(times: dict[str, list[float]], rounds: int) -> int:
    summary: dict[str, Any] = {"rounds": rounds}
    raw_min, raw_med = min(times["raw"]), statistics.median(times["raw"])
    for name, values in times.items():
        low, med = min(values), statistics.median(values)
        line = f"{name:>10}: min {low * 1000:6.2f} ms   median {med * 1000:6.2f} ms"
        entry: dict[str, Any] = {"minMs": round(low * 1000, 3), "medianMs": round(med * 1000, 3)}
        if name not in ("raw", "floor"):
            extra = (med - raw_med) * 1000
            line += f"   {med / raw_med:4.2f}x raw   +{extra:5.2f} ms (median)"
            line += f"   +{(low - raw_min) * 1000:5.2f} ms (min)"
            entry.update(ratio=round(med / raw_med, 3), extraMs=round(extra, 3))
        print(line)
        summary[name] = entry
    extra = summary["unconfined"]["extraMs"]
    verdict = "within" if extra <= TARGET_EXTRA_MS else "OVER"
    print(
        f"unconfined run_command: +{extra:.2f} ms over subprocess.run, {verdict} the {TARGET_EXTRA_MS:.0f} ms target"
    )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(summary, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
