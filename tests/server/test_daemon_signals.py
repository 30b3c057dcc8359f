"""`nohup meith serve` (or any start with SIGHUP ignored): an ignored signal stays ignored across
`exec`, so every command, dev server and terminal the runtime started ignored its hangup, and
closing a terminal took the killer's whole grace before SIGKILL. The runtime still outlives
the hangup; what it starts begins with the default. Real `meith serve` under real `nohup`."""

from __future__ import annotations

import shutil
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.harness import MEITH

pytestmark = pytest.mark.slow


def _ignored(status: str) -> set[int]:
    mask = int(
        next(line for line in status.splitlines() if line.startswith("SigIgn:")).split()[1], 16
    )
    return {sig for sig in range(1, 65) if mask & (1 << (sig - 1))}


@pytest.mark.skipif(shutil.which("nohup") is None, reason="no nohup here")
def test_what_a_nohup_runtime_starts_does_not_ignore_the_hangup(
    meith_server: Any, tmp_path: Path
) -> None:
    srv = meith_server(plugins="process", command=("nohup", MEITH))
    srv.approve("process")
    srv.grant("starts-process", cwd=str(tmp_path))
    done = srv.content(
        "run_command", {"cwd": str(tmp_path), "command": ["cat", "/proc/self/status"]}
    )
    assert done["exitCode"] == 0, done
    assert signal.SIGHUP not in _ignored(done["stdout"]), done["stdout"]
    # The runtime itself still outlives a hangup.
    srv.send_signal(signal.SIGHUP)
    assert srv.content("app_health") is not None
    assert srv.proc.poll() is None
