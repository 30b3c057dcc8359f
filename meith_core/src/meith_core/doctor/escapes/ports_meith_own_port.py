"""A confined dev server listens first on a port meith itself uses (the MCP bridge's HTTP port,
the console's) and asks for it to be opened on the host: whoever connects there next (an MCP
client with its bearer token) would talk to the process instead."""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path

from meith_core.doctor.agent import until
from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import connectable, free_port
from meith_core.doctor.programs import script

_LISTEN = """
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(8)
print("listening", flush=True)
time.sleep(600)
"""
#: How long the host's port is watched once the server listens.
WATCH_S = 3.0


def _as_meith_port(lab: Lab, port: int) -> None:
    """Record `port` as the lab runtime's MCP bridge port, where meith records its own."""
    from meith_core.base import port_registry

    saved = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = lab.env["XDG_STATE_HOME"]
    try:
        port_registry.record_port(port, "meith mcp --http (the doctor's)", configured=True)
    finally:
        if saved is None:
            os.environ.pop("XDG_STATE_HOME", None)
        else:
            os.environ["XDG_STATE_HOME"] = saved


def _squat(lab: Lab, *, meiths: bool) -> Seen:
    ws: Path = lab.dir("own-port")
    port = free_port()
    if meiths:
        _as_meith_port(lab, port)
    agent = lab.agent(ws)
    dev = agent.start(f"{script(ws, 'l.py', _LISTEN)} {port}", ports=[port])
    until(lambda: "listening" in agent.logs(dev), 30, "the listener")
    try:
        until(lambda: connectable(port), WATCH_S, "the port on the host")
        opened = True
    except Exception:
        opened = False
    return Seen(opened, f"127.0.0.1:{port} on the host {'was' if opened else 'was not'} opened")


ENTRY = Entry(
    id="ports-meith-own-port",
    wall="ports",
    attack="A port is recorded as meith's own (its MCP bridge's); an agent holding "
    "`starts-process --cwd WS` starts a dev server that listens on it first, with "
    "`ports: [PORT]`.",
    assertion="the host's 127.0.0.1:PORT is not opened for the process (a port meith uses or "
    "has configured is never forwarded)",
    control=partial(_squat, meiths=False),
    trick=partial(_squat, meiths=True),
    needs=Needs(plugins=("process",), walls=("network",)),
)
