"""`meith serve` under cProfile, for `bench_core.py --profile`.

    python _core_profile_serve.py OUT.prof serve --socket PATH ...

The statistics (process CPU time) are written when the runtime exits (SIGTERM: its normal
graceful shutdown).
"""

from __future__ import annotations

import cProfile
import sys
import time
from importlib.metadata import entry_points

if __name__ == "__main__":
    (script,) = entry_points(group="console_scripts", name="meith")
    run = script.load()
    out = sys.argv[1]
    sys.argv = ["meith", *sys.argv[2:]]
    # CPU time, not wall time: on a shared machine the wall clock also counts other jobs.
    profiler = cProfile.Profile(time.process_time)
    try:
        profiler.runcall(run)
    except SystemExit:
        pass
    finally:
        profiler.dump_stats(out)
