"""A confined process with a `--net` grant ignores its proxy and connects straight to the
destination the grant names (a client that skips the gate skips its audit)."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import tcp_listener
from meith_core.doctor.programs import CONNECT, script


def _direct(lab: Lab, *, confined: bool) -> Seen:
    ws = lab.dir("bypass")
    with tcp_listener() as (port, got):
        agent = lab.agent(ws, net=(f"127.0.0.1:{port}",), confined=confined)
        said = agent.run(f"{script(ws, 'c.py', CONNECT)} tcp 127.0.0.1 {port}")
    return Seen(bool(got), f"{said['stdout'].strip()}; the listener received {got!r}")


ENTRY = Entry(
    id="network-proxy-bypass",
    wall="network",
    attack="An agent holding `starts-process --cwd WS --net 127.0.0.1:PORT` connects to "
    "127.0.0.1:PORT directly, ignoring its proxy variables.",
    assertion="nothing arrives: only the gate leads out",
    control=partial(_direct, confined=False),
    trick=partial(_direct, confined=True),
    needs=Needs(plugins=("process",), walls=("network",)),
)
