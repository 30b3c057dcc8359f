"""`meith mcp` against a bare low-level MCP SDK server, both over stdio, measured in the same run.

- meith:    the SDK's `Client` over a `meith mcp` subprocess (stdio) bridged to a real `meith
            serve` with one trivial read-only plugin tool, `bench_echo`: every call goes
            bridge -> socket -> the runtime's whole pipeline (validation, permission gate,
            deadline, audit record) -> back.
- baseline: the same `Client` over `_mcp_bare_server.py`, the same tool on the SDK's low-level
            `Server` answering with the same content shape.

Both clients run in this process, interleaved round by round; each round times sequential
`tools/call`s on each. Reported: p50/p90 per side and the ratio of the p50s (target <= 1.3),
and, as a load-independent view, the CPU time per call of the serving processes (bridge plus
runtime against the bare server).

    python bench/bench_mcp.py [--quick] [--calls N] [--rounds R] [--era legacy|2026-07-28]

Writes bench/results/mcp.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import psutil
from _launch import MEITH, serve  # bench/ is the script's directory: sys.path[0]
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = Path(__file__).resolve().parent
RESULTS = ROOT / "bench" / "results" / "mcp.json"
TARGET_RATIO = 1.3


def _plugin_root(work: Path) -> Path:
    root = work / "plugin-site"
    dist = root / "meith_bench_plugin-0.0.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: meith-bench-plugin\nVersion: 0.0.0\n"
    )
    (dist / "entry_points.txt").write_text("[meith.plugins]\nbench = _core_plugin:BenchPlugin\n")
    return root


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _timed_calls(client: Client, n: int) -> list[float]:
    out: list[float] = []
    for i in range(n):
        start = time.perf_counter()
        result = await client.call_tool("bench_echo", {"text": f"x{i}"})
        out.append((time.perf_counter() - start) * 1000)
        block = result.content[0] if result.content else None
        text = block.text if isinstance(block, types.TextContent) else ""
        if result.is_error or json.loads(text or "null") != {"text": f"x{i}"}:
            raise RuntimeError(f"unexpected result: {result}")
    return out


def _server_processes(marker: str) -> list[psutil.Process]:
    """This process's children with `marker` as one of their arguments."""
    return [p for p in psutil.Process().children(recursive=True) if marker in p.cmdline()]


def _cpu_s(procs: list[psutil.Process]) -> float:
    total = 0.0
    for proc in procs:
        times = proc.cpu_times()
        total += times.user + times.system
    return total


async def measure(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    site = _plugin_root(work)
    runtime = serve(
        work / "serve", plugins="bench", env={"PYTHONPATH": f"{site}{os.pathsep}{BENCH_DIR}"}
    )
    try:
        meith_params = StdioServerParameters(
            command=MEITH,
            args=["mcp", "--no-start", "--tools", "bench_*"],
            env=dict(runtime.cli_env),
        )
        bare_params = StdioServerParameters(
            command=sys.executable,
            args=[str(BENCH_DIR / "_mcp_bare_server.py")],
            env=dict(os.environ),
        )
        meith: list[float] = []
        bare: list[float] = []
        async with (
            Client(meith_params, mode=args.era) as meith_client,
            Client(bare_params, mode=args.era) as bare_client,
        ):
            # Warm both (imports, first list, caches) before timing.
            await _timed_calls(meith_client, args.warmup)
            await _timed_calls(bare_client, args.warmup)
            meith_procs = [*_server_processes("mcp"), psutil.Process(runtime.proc.pid)]
            bare_procs = _server_processes(str(BENCH_DIR / "_mcp_bare_server.py"))
            meith_cpu = bare_cpu = 0.0
            for _ in range(args.rounds):
                before = _cpu_s(meith_procs)
                meith += await _timed_calls(meith_client, args.calls)
                meith_cpu += _cpu_s(meith_procs) - before
                before = _cpu_s(bare_procs)
                bare += await _timed_calls(bare_client, args.calls)
                bare_cpu += _cpu_s(bare_procs) - before
    finally:
        runtime.stop()
    return {
        "era": args.era,
        "calls": len(meith),
        "meith": {
            "p50": statistics.median(meith),
            "p90": _pct(meith, 0.9),
            "cpu_ms_per_call": meith_cpu * 1000 / len(meith),
        },
        "bare": {
            "p50": statistics.median(bare),
            "p90": _pct(bare, 0.9),
            "cpu_ms_per_call": bare_cpu * 1000 / len(bare),
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls (a smoke run)")
    parser.add_argument("--calls", type=int, default=200, help="calls per side per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--era", default="legacy", help="legacy or 2026-07-28")
    args = parser.parse_args()
    if args.quick:
        args.calls, args.rounds, args.warmup = 50, 2, 10
    with tempfile.TemporaryDirectory(prefix="meith-bench-mcp-") as tmp:
        result = anyio.run(measure, args, Path(tmp))
    ratio = result["meith"]["p50"] / result["bare"]["p50"]
    result["ratio_p50"] = ratio
    result["target"] = TARGET_RATIO
    print(
        f"tools/call bench_echo over stdio ({result['era']}, {result['calls']} calls each)\n"
        f"  meith mcp -> meith serve : p50 {result['meith']['p50']:.3f} ms  "
        f"p90 {result['meith']['p90']:.3f} ms\n"
        f"  bare low-level SDK server: p50 {result['bare']['p50']:.3f} ms  "
        f"p90 {result['bare']['p90']:.3f} ms\n"
        f"  ratio (p50): {ratio:.2f}x  (target <= {TARGET_RATIO}x: "
        f"{'met' if ratio <= TARGET_RATIO else 'NOT met'})\n"
        f"  CPU per call: bridge + runtime {result['meith']['cpu_ms_per_call']:.3f} ms, "
        f"bare server {result['bare']['cpu_ms_per_call']:.3f} ms "
        f"({result['meith']['cpu_ms_per_call'] / result['bare']['cpu_ms_per_call']:.2f}x)\n"
        f"  load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
