"""A grant names one Unix socket a confined process may reach (`--socket A`, a project's
database); the process reaches for its neighbour B in the same directory instead."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import unix_listener
from meith_core.doctor.programs import CONNECT, script


def _neighbour(lab: Lab, *, confined: bool) -> Seen:
    ws, out = lab.dir("granted-socket"), lab.dir("granted-socket", outside=True)
    granted, neighbour = str(out / "db.sock"), str(out / "other.sock")
    with unix_listener(granted) as _named, unix_listener(neighbour) as got:
        agent = lab.agent(ws, sockets=(granted,), confined=confined)
        said = agent.run(f"{script(ws, 'c.py', CONNECT)} unix {neighbour}")
    return Seen(bool(got), f"{said['stdout'].strip()}; the neighbour received {got!r}")


ENTRY = Entry(
    id="unix-socket-granted-only",
    wall="unix-sockets",
    attack="An agent holding `starts-process --cwd WS --socket OUT/db.sock` connects to "
    "OUT/other.sock, a socket beside the one its grant names.",
    assertion="nothing arrives: a grant's socket opens that socket, and no other",
    control=partial(_neighbour, confined=False),
    trick=partial(_neighbour, confined=True),
    needs=Needs(plugins=("process",), walls=("user-sockets",)),
)
