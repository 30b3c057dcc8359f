"""What Landlock confinement adds to starting a process: `true` spawned directly and through
the exec wrapper (`meith_core.policy.confine_exec`) with Landlock only and with the mount namespace
too, and a bare `python -I -S` start for comparison (the wrapper's floor), interleaved round-robin, minimum and median of
the wall time per spawn (a spawn waits on the kernel, so the CPU clock would miss most of it).

    python bench/bench_confine.py [--rounds N] [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from meith_core import Confinement, landlock_status


def spawn(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="3 rounds (a smoke run)")
    opts = parser.parse_args()
    rounds = 3 if opts.quick else opts.rounds
    status = landlock_status()
    print(status.describe())
    if not status.available:
        return
    with tempfile.TemporaryDirectory() as tmp:
        os.mkdir(os.path.join(tmp, "home"))
        plan = Confinement.beneath(tmp, extra_dirs=[tmp])
        mounts = Confinement.beneath(tmp, home=os.path.join(tmp, "home"))
        items = {
            "direct": ["true"],
            "python": [sys.executable, "-I", "-S", "-c", "pass"],
            "landlock": plan.wrap(["true"]),
        }
        if mounts.hidden:
            items["+mounts"] = mounts.wrap(["true"])
        times: dict[str, list[float]] = {k: [] for k in items}
        for _ in range(rounds):
            for name, argv in items.items():
                times[name].append(spawn(argv))
    for name, values in times.items():
        print(
            f"{name:>10}: min {min(values) * 1000:7.2f} ms   "
            f"median {statistics.median(values) * 1000:7.2f} ms"
        )
    extra = min(times["landlock"]) - min(times["direct"])
    print(f"confinement adds {extra * 1000:.1f} ms per process start (minimum over {rounds})")


if __name__ == "__main__":
    sys.exit(main())
