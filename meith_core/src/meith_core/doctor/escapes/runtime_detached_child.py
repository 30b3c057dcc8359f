"""A process an agent started double-forks and `setsid`s (no longer a child of the process
the runtime started), then connects to the runtime's socket claiming the local user."""

from __future__ import annotations

from meith_core.doctor.agent import until
from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import local_user
from meith_core.doctor.programs import AS_USER, script


def _detached(lab: Lab) -> Seen:
    ws = lab.dir("detached")
    attack = script(ws, "as_user.py", AS_USER)
    out = ws / "said"
    lab.agent(ws, confined=False).run(f"{attack} detached {lab.runtime.socket} {out}")
    said = until(lambda: out.exists() and out.read_text(), 60, "the detached process")
    return Seen(str(said).startswith("served"), str(said))


ENTRY = Entry(
    id="runtime-detached-child",
    wall="runtimes",
    attack="An agent holding an unconfined `starts-process` runs a program that double-forks, "
    "`setsid`s, drops its token and connects to the runtime's socket claiming `cli`.",
    assertion="the runtime refuses it (it adopted the orphan: still its descendant)",
    control=local_user,
    trick=_detached,
    needs=Needs(plugins=("process",)),
)
