"""The child subreaper: adopted orphans are reaped without taking their exit statuses from the
runtime's own children."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from meith_core.serve.orphans import OrphanReaper, adopt_orphans, release_orphans
from tests.harness import wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")


def test_adopted_orphans_are_reaped_and_own_children_keep_their_status(tmp_path: Path) -> None:
    assert adopt_orphans()
    try:
        # A grandchild orphaned by its parent is adopted by this process, then exits.
        pidfile = tmp_path / "pid"
        script = (
            "import os, sys\n"
            "if os.fork(): os._exit(0)\n"
            "open(sys.argv[1], 'w').write(str(os.getpid()))\n"
        )
        subprocess.run([sys.executable, "-c", script, str(pidfile)], check=True)
        own = subprocess.Popen([sys.executable, "-c", "raise SystemExit(7)"])
        reaper = OrphanReaper(grace_s=60.0)
        assert wait_until(lambda: pidfile.exists() and pidfile.read_text() != "")
        orphan = int(pidfile.read_text())
        os.waitid(os.P_PID, orphan, os.WEXITED | os.WNOWAIT)  # ours now, and exited
        own_status = os.waitid(os.P_PID, own.pid, os.WEXITED | os.WNOWAIT)
        assert own_status is not None
        # Within the grace period nothing is taken, from anyone.
        assert reaper.sweep(now=0.0) == []
        assert reaper.sweep(now=59.0) == []
        assert own.wait() == 7  # its waiter got its status
        # Past it, the zombie nobody waited for is reaped.
        assert orphan in reaper.sweep(now=61.0)
        with pytest.raises(ChildProcessError):
            os.waitpid(orphan, os.WNOHANG)
    finally:
        release_orphans()
