"""A confined process connects to a Unix socket the user creates after it started."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.agent import until
from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import unix_listener
from meith_core.doctor.programs import CONNECT, script


def _later(lab: Lab, *, confined: bool) -> Seen:
    ws = lab.dir("socket-later")
    path = str(lab.dir("socket-later", outside=True) / "later.sock")
    connect = script(ws, "c.py", CONNECT)
    agent = lab.agent(ws, confined=confined)
    # It waits for the socket to exist, then tries.
    dev = agent.start(
        f"while [ ! -e {ws}/go ]; do sleep 0.05; done; {connect} unix {path}; echo done"
    )
    with unix_listener(path) as got:
        (ws / "go").touch()
        said = until(lambda: "done" in agent.logs(dev) and agent.logs(dev), 30, "the attempt")
    return Seen(bool(got), f"{said.strip()}; the listener received {got!r}")


ENTRY = Entry(
    id="unix-socket-after-start",
    wall="unix-sockets",
    attack="An agent holding `starts-process --cwd WS` starts a dev server that waits; the "
    "user then opens a Unix socket outside WS; the process connects to it.",
    assertion="nothing arrives (sockets created after the process started are covered too)",
    control=partial(_later, confined=False),
    trick=partial(_later, confined=True),
    needs=Needs(plugins=("process",), walls=("writes",)),
)
