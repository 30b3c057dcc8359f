"""A confined process without a `--net` grant sends UDP (DNS tunnels, exfiltration)."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import udp_listener
from meith_core.doctor.programs import CONNECT, script


def _udp(lab: Lab, *, confined: bool) -> Seen:
    ws = lab.dir("udp")
    with udp_listener() as (port, got):
        said = lab.agent(ws, confined=confined).run(
            f"{script(ws, 'c.py', CONNECT)} udp 127.0.0.1 {port}"
        )
    return Seen(bool(got), f"{said['stdout'].strip()}; the listener received {got!r}")


ENTRY = Entry(
    id="network-udp-no-grant",
    wall="network",
    attack="An agent holding `starts-process --cwd WS` sends UDP datagrams to a listener on the "
    "host's 127.0.0.1.",
    assertion="nothing arrives (UDP has nowhere to go)",
    control=partial(_udp, confined=False),
    trick=partial(_udp, confined=True),
    needs=Needs(plugins=("process",), walls=("udp",)),
)
