"""Per-item cost of a batch, for the micro benchmarks: one helper, one way of measuring."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def us_per_item(
    run: Callable[[int], object],
    n: int,
    reps: int,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Median over `reps` of `clock` time taken by `run(n)`, per item, in microseconds
    (`time.process_time` for CPU time, the default for wall time)."""
    samples = []
    for _ in range(reps):
        start = clock()
        run(n)
        samples.append((clock() - start) / n * 1e6)
    return statistics.median(samples)
