"""A confined process's listening port is opened on the host without being asked: a port
some tool of the user binds later (the MCP bridge's, an OAuth callback's) is squatted."""

from __future__ import annotations

import threading
from functools import partial
from typing import Any

from meith_core.doctor.agent import until
from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import connectable, free_port
from meith_core.doctor.programs import script

_LISTEN = """
import os, socket, sys, time
port, ready, stop = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.socket()
s.bind(("127.0.0.1", port))
s.listen(8)
open(ready, "w").close()
deadline = time.monotonic() + 60
while not os.path.exists(stop) and time.monotonic() < deadline:
    time.sleep(0.05)
"""
#: How long the host's port is watched: several of the forwarder's polls.
WATCH_S = 3.0


def _squat(lab: Lab, *, confined: bool) -> Seen:
    ws = lab.dir("unasked")
    port = free_port()
    ready, stop = ws / "ready", ws / "stop"
    agent = lab.agent(ws, confined=confined)
    answer: dict[str, Any] = {}
    call = threading.Thread(
        target=lambda: answer.update(
            agent.run(f"{script(ws, 'l.py', _LISTEN)} {port} {ready} {stop}")
        )
    )
    call.start()
    try:
        until(ready.exists, 30, "the listener")
        try:
            until(lambda: connectable(port), WATCH_S, "the port on the host")
            taken = True
        except Exception:
            taken = False
    finally:
        stop.touch()
        call.join(60)
    return Seen(
        taken,
        f"127.0.0.1:{port} on the host {'was' if taken else 'was not'} opened "
        f"while a `run_command` listened on it (watched {WATCH_S:.0f} s)",
    )


ENTRY = Entry(
    id="ports-unasked",
    wall="ports",
    attack="An agent holding `starts-process --cwd WS` runs a `run_command` that listens on "
    "PORT, which nothing asked to forward.",
    assertion="the host's 127.0.0.1:PORT stays free (ports are forwarded when a call names "
    "them or its readiness finds them, never by listening alone)",
    control=partial(_squat, confined=False),
    trick=partial(_squat, confined=True),
    needs=Needs(plugins=("process",), walls=("network",)),
)
