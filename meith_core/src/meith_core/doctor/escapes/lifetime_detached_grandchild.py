"""A command's process forks, `setsid`s, forks again and execs with a clean environment (no
marker of meith's): it is in neither the command's session nor its group, and outlives the
call that started it."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import detached, running
from meith_core.doctor.served import end_processes


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
