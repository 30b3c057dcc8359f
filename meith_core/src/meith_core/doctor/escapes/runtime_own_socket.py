"""A process an agent started (unconfined) drops its session token and connects to the
runtime's own socket claiming to be the local user."""

from __future__ import annotations

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import local_user
from meith_core.doctor.programs import AS_USER, script


def _child(lab: Lab) -> Seen:
    ws = lab.dir("own-socket")
    attack = script(ws, "as_user.py", AS_USER)
    said = lab.agent(ws, confined=False).run(f"{attack} child {lab.runtime.socket} -")["stdout"]
    return Seen(said.startswith("served"), said)


ENTRY = Entry(
    id="runtime-own-socket",
    wall="runtimes",
    attack="An agent holding an unconfined `starts-process` runs a program that drops "
    "MEITH_SESSION_TOKEN and connects to the runtime's socket claiming `cli`.",
    assertion="the runtime refuses it (a process it started is never the local user)",
    control=local_user,
    trick=_child,
    needs=Needs(plugins=("process",)),
)
