"""A confined process connects to an abstract Unix socket of the user's (desktop services,
X11's `@/tmp/.X11-unix/X0`)."""

from __future__ import annotations

import secrets
from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import unix_listener
from meith_core.doctor.programs import CONNECT, script


def _connect(lab: Lab, *, confined: bool) -> Seen:
    ws = lab.dir("abstract")
    name = f"meith-doctor-{secrets.token_hex(6)}"
    with unix_listener("\0" + name) as got:
        said = lab.agent(ws, confined=confined).run(
            f"{script(ws, 'c.py', CONNECT)} abstract {name}"
        )
    return Seen(bool(got), f"{said['stdout'].strip()}; the listener received {got!r}")


ENTRY = Entry(
    id="unix-socket-abstract",
    wall="unix-sockets",
    attack="The user listens on an abstract Unix socket; an agent holding `starts-process "
    "--cwd WS` connects to it and sends a line.",
    assertion="nothing arrives (abstract sockets are scoped to the domain, and to the "
    "network namespace)",
    control=partial(_connect, confined=False),
    trick=partial(_connect, confined=True),
    needs=Needs(plugins=("process",), walls=("signals",)),
)
