"""What the tests of the plugin author's commands share: the `meith` command in this environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
BROKEN = ROOT / "tests" / "fixtures" / "meith_check_fixtures"


def meith(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from meith_core.cli import run; run()", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        check=False,
    )
