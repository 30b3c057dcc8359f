"""The files plugin through `meith serve` against ripgrep and the bare round trip, same run.

The tree is a copy of this Python's standard library source directory (without
`site-packages` and `__pycache__`, so that `rg` and the tools walk the same files). Measured
interleaved, medians of the repetitions, through a real `meith serve` (files plugin, and the
benchmark-only `bench_echo` tool) over its Unix socket with the Python client:

- search: `workspace_search` (literal and regex queries, limit 5,000) vs `rg --json` for the
          same query, run as a subprocess from Python and its output read whole.
- list:   `workspace_list_files` (limit 20,000) vs `rg --files`.
  Beside each, the argv the tool runs (its flags, default ignores and limits) timed alone,
  which separates what the flags cost from what meith adds.
- read:   `workspace_read_file` of a 1 MiB text file vs `bench_echo` (the bare round trip):
          a small request answered with 1 MiB (the target's baseline: the same answer size),
          empty, and carrying 1 MiB both ways.
- patch:  `workspace_apply_patch` of one exact-text edit (undo step and atomic replace
          included) vs the bare round trip.

    python bench/bench_files.py [--quick] [--reps R]

Writes bench/results/files.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _launch import ROOT, MeithServer  # bench/ is the script's directory: sys.path[0]
from bench_core import write_plugin_distribution

RESULTS = ROOT / "bench" / "results" / "files.json"
#: The issue's targets: ripgrep ratios, and milliseconds above the bare round trip.
TARGET_RATIO = 1.2
TARGET_ABOVE_MS = 2.0
QUERIES = {"literal": ("import threading", False), "regex": (r"def test_\w+_error", True)}


def timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _outside_repo() -> str | None:
    """Where the tree is laid: the temp directory, unless it lies inside this repository
    (nox sets TMPDIR to .nox/<session>/tmp), where `.gitignore`'s `.nox/` would hide every
    file from plain `rg`; then the system's /tmp."""
    tmp = Path(tempfile.gettempdir()).resolve()
    return "/tmp" if tmp.is_relative_to(ROOT) else None


def copy_stdlib(dest: Path, quick: bool) -> Path:
    src = Path(sysconfig.get_paths()["stdlib"])
    skip = shutil.ignore_patterns("__pycache__", "site-packages", "*.pyc")
    tree = dest / "stdlib"
    if quick:
        # A slice of the tree: the top-level modules and two packages.
        tree.mkdir()
        for p in src.glob("*.py"):
            shutil.copy2(p, tree / p.name)
        for pkg in ("email", "asyncio"):
            shutil.copytree(src / pkg, tree / pkg, ignore=skip, symlinks=True)
    else:
        shutil.copytree(src, tree, ignore=skip, symlinks=True)
    return tree


def one_mib_file(ws: Path, tree: Path) -> Path:
    out = ws / "one_mib.py"
    parts: list[bytes] = []
    size = 0
    for p in sorted(tree.rglob("*.py")):
        data = p.read_bytes()
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        parts.append(data)
        size += len(data)
        if size >= 1024 * 1024:
            break
    out.write_bytes(b"".join(parts)[: 1024 * 1024].rsplit(b"\n", 1)[0] + b"\n")
    return out


def start(work: Path) -> MeithServer:
    plugin_path = work / "pluginpath"
    plugin_path.mkdir()
    write_plugin_distribution(plugin_path)
    pythonpath = os.pathsep.join([str(plugin_path), str(ROOT / "bench")])
    server = MeithServer(
        work / "meith-home",
        plugins="files,bench",
        env={"PYTHONPATH": pythonpath},
        drop_env=("PYTHONPATH", "PYTHONDONTWRITEBYTECODE"),
    )
    server.approve("files")
    server.grant("writes-files")
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a slice of the tree, 5 repetitions")
    parser.add_argument("--reps", type=int, default=21)
    opts = parser.parse_args()
    if opts.quick:
        opts.reps = 5

    from meith_core.client import Client
    from meith_plugins_files.rg_run import locate

    rg = locate()
    if rg is None:
        sys.exit("bench_files: no rg (install the ripgrep package)")
    work = Path(tempfile.mkdtemp(prefix="meith-bench-files-", dir=_outside_repo()))
    server = None
    try:
        tree = copy_stdlib(work, opts.quick)
        ws = work / "ws"
        ws.mkdir()
        big = one_mib_file(ws, tree)
        target = ws / "patched.py"
        shutil.copy2(tree / "os.py", target)
        server = start(work)
        client = Client(server.socket, cwd=str(ws))
        try:
            figures = measure(client, rg, tree, ws, big, target, opts.reps)
        finally:
            client.close()
        figures["inProcess"] = asyncio.run(in_process(work, ws, big, target, opts.reps))
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    report(figures, opts, rg)


def measure(
    client: Any, rg: str, tree: Path, ws: Path, big: Path, target: Path, reps: int
) -> dict[str, Any]:
    def call(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        res: dict[str, Any] = client.call_raw(tool, args)
        assert res["ok"], res
        return res["content"]  # type: ignore[no-any-return]

    def rg_run(*args: str) -> bytes:
        # No path: rg walks its cwd, with standard input closed (a readable stdin, a pipe,
        # would be searched instead of the tree).
        done = subprocess.run(
            [rg, *args], cwd=tree, capture_output=True, stdin=subprocess.DEVNULL, check=False
        )
        assert done.returncode in (0, 1), done.stderr
        return done.stdout

    from meith_plugins_files import ripgrep

    def hardened(argv: list[str]) -> Callable[[], Any]:
        # The argv the tool runs (its flags, ignores and limits), without meith around it.
        return lambda: subprocess.run(
            argv, cwd=tree, capture_output=True, stdin=subprocess.DEVNULL, check=False
        )

    counts: dict[str, int] = {}
    ops: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {}
    alone: dict[str, Callable[[], Any]] = {
        "list": hardened(ripgrep.files_argv(rg, ripgrep.Walk(), ".")),
    }
    for name, (query, regex) in QUERIES.items():
        alone[f"search_{name}"] = hardened(
            ripgrep.search_argv(
                rg, ripgrep.Walk(), ".", query=query, regex=regex, case_sensitive=True, context=0
            )
        )
        flags = () if regex else ("--fixed-strings",)
        args = {
            "cwd": str(tree),
            "query": query,
            "regex": regex,
            "caseSensitive": True,
            "limit": 5000,
        }
        rg_lines = rg_run("--json", *flags, "--", query).count(b'"type":"match"')
        counts[f"search_{name}"] = rg_lines
        assert len(call("workspace_search", args)["matches"]) == rg_lines
        ops[f"search_{name}"] = (
            lambda q=query, f=flags: rg_run("--json", *f, "--", q),
            lambda a=args: call("workspace_search", a),
        )
    listed = call("workspace_list_files", {"cwd": str(tree), "limit": 20_000})
    assert not listed["truncated"]
    counts["list"] = listed["count"]
    assert counts["list"] == rg_run("--files").count(b"\n")
    ops["list"] = (
        lambda: rg_run("--files"),
        lambda: call("workspace_list_files", {"cwd": str(tree), "limit": 20_000}),
    )

    payload = big.read_text()
    read_args = {"cwd": str(ws), "path": big.name, "limit": 1_000_000}
    assert call("workspace_read_file", read_args)["content"] == payload
    edits = [
        [{"oldText": "import abc\n", "newText": "import abc  # patched\n"}],
        [{"oldText": "import abc  # patched\n", "newText": "import abc\n"}],
    ]
    flip = [0]

    def patch() -> None:
        call(
            "workspace_apply_patch", {"cwd": str(ws), "path": target.name, "edits": edits[flip[0]]}
        )
        flip[0] ^= 1

    per_call = {
        "echo": lambda: call("bench_echo", {}),
        "echo_1mib": lambda: call("bench_echo", {"text": payload}),
        # A small request, the read's 1 MiB back: the bare round trip of the read's answer.
        "back_1mib": lambda: call(
            "bench_echo", {"text": payload[:1024], "repeat": max(1, len(payload) // 1024)}
        ),
        "read_1mib": lambda: call("workspace_read_file", read_args),
        "patch": patch,
    }
    samples: dict[str, list[float]] = {
        k: [] for k in [*per_call, *(f"{k}_rg" for k in ops), *(f"{k}_argv" for k in ops), *ops]
    }
    for fn in [*per_call.values(), *(f for pair in ops.values() for f in pair)]:
        fn()  # warm-up: caches, first imports, the server's first call
    for _ in range(reps):
        for name, (bare, tool) in ops.items():
            samples[f"{name}_rg"].append(timed(bare))
            samples[f"{name}_argv"].append(timed(alone[name]))
            samples[name].append(timed(tool))
        for name, fn in per_call.items():
            samples[name].append(timed(fn))
    return {
        "counts": counts,
        "ms": {k: statistics.median(v) * 1000 for k, v in samples.items()},
    }


def _patched(target: Path) -> int:
    """Which of the two alternating edits applies now (1 once the first one was made)."""
    return int("import abc  # patched\n" in target.read_text())


async def in_process(work: Path, ws: Path, big: Path, target: Path, reps: int) -> dict[str, float]:
    """The breakdown: the same read and patch in-process (no socket), and the patch with
    fsync stubbed out, which shows what durable writes cost on this disk (the workspace file
    and the undo index are each flushed before the call answers)."""
    from unittest import mock

    from meith_core import MeithHome, Runtime
    from meith_plugins_files.plugin import Plugin

    home = MeithHome(work / "inprocess-home").ensure()
    runtime = Runtime(home, load_plugins=False, cwd=str(ws))
    await runtime.start()
    runtime.load_plugin("files", Plugin)
    runtime.approve_plugin("files")
    edits = [
        [{"oldText": "import abc\n", "newText": "import abc  # patched\n"}],
        [{"oldText": "import abc  # patched\n", "newText": "import abc\n"}],
    ]

    cpu: dict[str, list[float]] = {"read_1mib": [], "patch": []}

    async def timed_call(tool: str, args: dict[str, Any], cpu_key: str | None = None) -> float:
        t0, c0 = time.perf_counter(), time.process_time()
        res = await runtime.call(tool, args)
        elapsed = time.perf_counter() - t0
        if cpu_key is not None:
            # The runtime's CPU for the call (every thread of this process), which a loaded
            # machine inflates far less than wall time.
            cpu[cpu_key].append(time.process_time() - c0)
        assert res.ok, res.error
        return elapsed

    read_args = {"path": big.name, "limit": 1_000_000}
    samples: dict[str, list[float]] = {"read_1mib": [], "patch": [], "patch_no_fsync": []}
    try:
        await timed_call("workspace_read_file", read_args)
        for _ in range(reps * 2):
            samples["read_1mib"].append(
                await timed_call("workspace_read_file", read_args, "read_1mib")
            )
            patch = {"path": target.name, "edits": edits[_patched(target)]}
            samples["patch"].append(await timed_call("workspace_apply_patch", patch, "patch"))
            with mock.patch("os.fsync"):
                patch = {"path": target.name, "edits": edits[_patched(target)]}
                samples["patch_no_fsync"].append(await timed_call("workspace_apply_patch", patch))
    finally:
        await runtime.aclose()
    out = {k: statistics.median(v) * 1000 for k, v in samples.items()}
    out.update({f"{k}_cpu": statistics.median(v) * 1000 for k, v in cpu.items()})
    return out


def report(figures: dict[str, Any], opts: argparse.Namespace, rg: str) -> None:
    ms, counts = figures["ms"], figures["counts"]
    out: dict[str, Any] = {"reps": opts.reps, "quick": opts.quick, "rg": rg, "counts": counts}
    print(f"\nmedian of {opts.reps} (ms); tree: {counts['list']} files")
    print(f"{'':<32}{'rg':>10}{'meith':>10}{'ratio':>8}  target   (the tool's rg argv alone)")
    for name, label in (
        ("search_literal", f"search literal ({counts['search_literal']} hits)"),
        ("search_regex", f"search regex ({counts['search_regex']} hits)"),
        ("list", "list_files vs rg --files"),
    ):
        ratio = ms[name] / ms[f"{name}_rg"]
        print(
            f"{label:<32}{ms[name + '_rg']:>10.2f}{ms[name]:>10.2f}{ratio:>7.2f}x  <= {TARGET_RATIO}x"
            f"   {ms[name + '_argv']:.2f}"
        )
        out[name] = {
            "rgMs": round(ms[f"{name}_rg"], 3),
            "toolArgvAloneMs": round(ms[f"{name}_argv"], 3),
            "meithMs": round(ms[name], 3),
            "ratio": round(ratio, 3),
            "withinTarget": ratio <= TARGET_RATIO,
        }
    print(f"\n{'':<32}{'bare':>10}{'meith':>10}{'above':>8}  target")
    for name, bare, label in (
        ("read_1mib", "back_1mib", "read 1 MiB vs 1 MiB back"),
        ("read_1mib", "echo", "read 1 MiB vs empty echo"),
        ("read_1mib", "echo_1mib", "read 1 MiB vs 1 MiB echo"),
        ("patch", "echo", "apply_patch one edit"),
    ):
        above = ms[name] - ms[bare]
        print(
            f"{label:<32}{ms[bare]:>10.2f}{ms[name]:>10.2f}{above:>8.2f}  <= {TARGET_ABOVE_MS} ms"
        )
        out[f"{name}_vs_{bare}"] = {
            "bareMs": round(ms[bare], 3),
            "meithMs": round(ms[name], 3),
            "aboveMs": round(above, 3),
            "withinTarget": above <= TARGET_ABOVE_MS,
        }
    inproc = figures["inProcess"]
    print(
        f"\nin-process (no socket): read 1 MiB {inproc['read_1mib']:.2f} ms, apply_patch "
        f"{inproc['patch']:.2f} ms, apply_patch with fsync stubbed {inproc['patch_no_fsync']:.2f} ms"
    )
    print(
        f"CPU of the runtime per call: read 1 MiB {inproc['read_1mib_cpu']:.2f} ms, "
        f"apply_patch {inproc['patch_cpu']:.2f} ms"
    )
    out["inProcess"] = {k: round(v, 3) for k, v in inproc.items()}
    out["loadAverage"] = os.getloadavg()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(f"\nwrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
