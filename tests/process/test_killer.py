"""The one process-group killer, on its own."""

from __future__ import annotations

import os
import signal
import subprocess

import psutil
import pytest

from meith_plugins_process.killer import KillTarget, parse_signal, terminate
from tests.process.support import gone

pytestmark = pytest.mark.anyio


def test_parse_signal_accepts_names_short_names_and_numbers() -> None:
    assert parse_signal("SIGINT", signal.SIGTERM) is signal.SIGINT
    assert parse_signal("hup", signal.SIGTERM) is signal.SIGHUP
    assert parse_signal("9", signal.SIGTERM) is signal.SIGKILL
    assert parse_signal(None, signal.SIGTERM) is signal.SIGTERM
    with pytest.raises(ValueError, match="unknown signal"):
        parse_signal("SIGNOPE", signal.SIGTERM)


async def test_terminate_ends_groups_in_parallel_and_reports_what_it_found() -> None:
    # Two groups ignoring SIGTERM: both need SIGKILL after the one shared grace period.
    procs = [
        subprocess.Popen(
            ["/bin/sh", "-c", "trap '' TERM; sleep 300 & wait"], start_new_session=True
        )
        for _ in range(2)
    ]
    try:
        targets = [
            KillTarget(f"dev_{i}", p.pid, psutil.Process(p.pid).create_time(), signal.SIGTERM)
            for i, p in enumerate(procs)
        ]
        while any(len(psutil.Process(p.pid).children()) < 1 for p in procs):
            pass
        kids = [c.pid for p in procs for c in psutil.Process(p.pid).children()]
        outcomes = await terminate(targets, grace_s=0.2)
        assert [o.id for o in outcomes] == ["dev_0", "dev_1"]
        for out, proc in zip(outcomes, procs, strict=True):
            assert proc.pid in out.found
            assert proc.pid in out.killed
            assert out.survivors == []
        assert all(gone(pid) for pid in kids)
    finally:
        for p in procs:
            p.kill()
            p.wait()


async def test_a_reused_pid_is_not_signalled_and_the_runtime_never_signals_itself() -> None:
    bystander = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        created = psutil.Process(bystander.pid).create_time()
        wrong = [
            KillTarget("dev_reused", bystander.pid, created - 100, signal.SIGKILL),
            KillTarget("dev_me", os.getpid(), psutil.Process().create_time(), signal.SIGKILL),
            KillTarget("dev_parent", os.getppid(), None, signal.SIGKILL),
        ]
        outcomes = await terminate(wrong, grace_s=0.1)
        assert all(o.found == [] for o in outcomes)
        assert not gone(bystander.pid)
    finally:
        bystander.kill()
        bystander.wait()


async def test_a_target_the_runtime_itself_runs_inside_is_left_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The runtime was started from a terminal a previous runtime left behind: that terminal's
    # other jobs carry the same marker, and they are the user's.
    monkeypatch.setenv("MEITH_PROCESS_ID", "term_outer000000")
    sibling = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        outcomes = await terminate(
            [KillTarget("term_outer000000", None, None, signal.SIGKILL)], grace_s=0.1
        )
        assert outcomes[0].found == []
        assert not gone(sibling.pid)
        # The same marker on a target that is not ours is hunted down.
        monkeypatch.delenv("MEITH_PROCESS_ID")
        outcomes = await terminate(
            [KillTarget("term_outer000000", None, None, signal.SIGKILL)], grace_s=0.1
        )
        assert sibling.pid in outcomes[0].found
        assert gone(sibling.pid)
    finally:
        sibling.kill()
        sibling.wait()
