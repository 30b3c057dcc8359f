"""A confined process connects to a Unix socket of the user's outside its directory (an
editor's, a database's, a desktop service's)."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import unix_listener
from meith_core.doctor.programs import CONNECT, script


def _connect(lab: Lab, *, confined: bool) -> Seen:
    ws = lab.dir("unix-socket")
    path = str(lab.dir("unix-socket", outside=True) / "app.sock")
    with unix_listener(path) as got:
        said = lab.agent(ws, confined=confined).run(f"{script(ws, 'c.py', CONNECT)} unix {path}")
    return Seen(bool(got), f"{said['stdout'].strip()}; the listener received {got!r}")


ENTRY = Entry(
    id="unix-socket-user-listener",
    wall="unix-sockets",
    attack="The user has a process listening on a Unix socket outside WS; an agent holding "
    "`starts-process --cwd WS` connects to it and sends a line.",
    assertion="nothing arrives (no pathname socket outside the directory is reachable unless "
    "the grant names it)",
    control=partial(_connect, confined=False),
    trick=partial(_connect, confined=True),
    needs=Needs(plugins=("process",), walls=("writes",)),
)
