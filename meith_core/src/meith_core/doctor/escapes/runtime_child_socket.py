"""A confined process connects to the socket its session's children call back on, without
its token, claiming the local user."""

from __future__ import annotations

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import local_user
from meith_core.doctor.programs import AS_USER, script


def _bare(lab: Lab) -> Seen:
    ws = lab.dir("child-socket")
    attack = script(ws, "as_user.py", AS_USER)
    said = lab.agent(ws).run(f'{attack} child "$MEITH_SOCKET" -')["stdout"]
    return Seen(said.startswith("served"), said)


ENTRY = Entry(
    id="runtime-child-socket",
    wall="runtimes",
    attack="An agent holding `starts-process --cwd WS` runs a program that connects to "
    "$MEITH_SOCKET (its session's way back) without MEITH_SESSION_TOKEN, claiming `cli`.",
    assertion="refused: that socket serves only a session's token",
    control=local_user,
    trick=_bare,
    needs=Needs(plugins=("process",), walls=("writes",)),
)
