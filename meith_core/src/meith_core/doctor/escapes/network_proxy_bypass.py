"""A confined process with a `--net` grant for one loopback port ignores its proxy and connects
straight to another port of the host's loopback (a client that skips the gate skips its rules
and its audit)."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import tcp_listener
from meith_core.doctor.programs import CONNECT, script


def _direct(lab: Lab, *, confined: bool) -> Seen:
    ws = lab.dir("bypass")
    with tcp_listener() as (named, _), tcp_listener() as (port, got):
        # The grant names one loopback port (reached inside through the gate's tunnel, by
        # design); the other is the one the process tries, directly.
        agent = lab.agent(ws, net=(f"127.0.0.1:{named}",), confined=confined)
        said = agent.run(f"{script(ws, 'c.py', CONNECT)} tcp 127.0.0.1 {port}")
    return Seen(bool(got), f"{said['stdout'].strip()}; the listener received {got!r}")


ENTRY = Entry(
    id="network-proxy-bypass",
    wall="network",
    attack="An agent holding `starts-process --cwd WS --net 127.0.0.1:NAMED` connects directly "
    "to another port of the host's loopback, ignoring its proxy variables.",
    assertion="nothing arrives: only the destinations the grant names lead out",
    control=partial(_direct, confined=False),
    trick=partial(_direct, confined=True),
    needs=Needs(plugins=("process",), walls=("network",)),
)
