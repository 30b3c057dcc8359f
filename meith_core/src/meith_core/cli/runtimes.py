"""`meith instances` and `meith stop`: the live runtimes of this MEITH_HOME."""

from __future__ import annotations

import os
import signal
import sys
import time

from meith_core.base.home import MeithHome
from meith_core.base.instances import live_instances, match_instances
from meith_core.cli.output import (
    EXIT_OK,
    EXIT_TOOL_FAILED,
    EXIT_USAGE,
    fail,
    pretty,
    table,
    utc_time,
)


def run_instances(as_json: bool) -> int:
    records = live_instances(MeithHome.from_env().ensure())
    if as_json:
        sys.stdout.write(pretty([r.to_json() for r in records]) + "\n")
        return EXIT_OK
    if not records:
        sys.stdout.write("No running meith instances.\n")
        return EXIT_OK
    table(
        [
            [str(r.pid), utc_time(r.started_at) + " UTC", r.version, r.label or "-", r.socket_path]
            for r in records
        ],
        ["PID", "STARTED", "VERSION", "LABEL", "SOCKET"],
    )
    return EXIT_OK


def run_stop(target: str | None, all_: bool, as_json: bool) -> int:
    home = MeithHome.from_env().ensure()
    if target:
        records = match_instances(home, target)
        if not records:
            return fail(
                f'No live instance matches "{target}". Run "meith instances" to see running instances.',
                EXIT_USAGE,
            )
    else:
        records = live_instances(home)
        if not records:
            return fail("No running meith instances.", EXIT_TOOL_FAILED)
        if len(records) > 1 and not all_:
            running = ", ".join(str(r.pid) for r in records)
            return fail(
                f"Several instances are running ({running}); name one (PID or label) or use --all.",
                EXIT_USAGE,
            )
    pids = [r.pid for r in records]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 5.0
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [p for p in alive if _pid_alive(p)]
    stopped = [p for p in pids if p not in alive]
    if as_json:
        sys.stdout.write(pretty({"stopped": stopped, "stillRunning": alive}) + "\n")
    else:
        if stopped:
            sys.stdout.write(f"Stopped: {', '.join(map(str, stopped))}\n")
        if alive:
            sys.stdout.write(f"Sent SIGTERM, still running: {', '.join(map(str, alive))}\n")
    return EXIT_OK if not alive else EXIT_TOOL_FAILED


def _pid_alive(pid: int) -> bool:
    from meith_core.base.instances import is_pid_alive

    if not is_pid_alive(pid):
        return False
    try:  # a zombie child of ours would count as alive otherwise
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().split(b") ", 1)[1][:1] != b"Z"
    except (OSError, IndexError):
        return True
