"""A command's process forks, `setsid`s, forks again and execs with a clean environment (no
marker of meith's): it is in neither the command's session nor its group, and outlives the
call that started it."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import DETACH, running, script
from meith_core.doctor.served import end_processes


def detached(lab: Lab, *, confined: bool, command: str = "true") -> tuple[Path, Seen]:
    """Run DETACH by an agent's `run_command` (or as the user) in a fresh workspace: the GO
    file that releases the grandchild into `command`, and whether it outlived the call."""
    ws = lab.dir("detached")
    go = ws / "go"
    line = f'{script(ws, "detach.py", DETACH)} {go} "{command}"'
    if confined:
        done = lab.agent(ws).run(line)
        said = f"run_command answered exit {done['exitCode']}"
    else:
        said = f"the user's shell exited {lab.sh(line, ws).returncode}"
    left = running(str(go))
    for pid in left:
        lab.track(pid)
    return go, Seen(
        bool(left),
        f"{said}; its detached grandchild " + (f"still runs (pid {left})" if left else "is gone"),
    )


def _outlives(lab: Lab, *, confined: bool) -> Seen:
    go, seen = detached(lab, confined=confined)
    end_processes(running(str(go)))
    return seen


ENTRY = Entry(
    id="lifetime-detached-grandchild",
    wall="lifetime",
    attack="An agent holding `starts-process --cwd WS` calls `run_command` with a program "
    "that forks, `setsid`s, forks again and execs `sh` with an empty environment, then exits.",
    assertion="when `run_command` answers, nothing it started runs any more",
    control=partial(_outlives, confined=False),
    trick=partial(_outlives, confined=True),
    needs=Needs(plugins=("process",), walls=("writes",)),
)
