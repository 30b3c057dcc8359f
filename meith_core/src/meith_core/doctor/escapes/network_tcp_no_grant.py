"""A confined process without a `--net` grant connects out over TCP."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import tcp_listener
from meith_core.doctor.programs import CONNECT, script


def _tcp(lab: Lab, *, confined: bool) -> Seen:
    ws = lab.dir("tcp")
    with tcp_listener() as (port, got):
        said = lab.agent(ws, confined=confined).run(
            f"{script(ws, 'c.py', CONNECT)} tcp 127.0.0.1 {port}"
        )
    return Seen(bool(got), f"{said['stdout'].strip()}; the listener received {got!r}")


ENTRY = Entry(
    id="network-tcp-no-grant",
    wall="network",
    attack="An agent holding `starts-process --cwd WS` (no `--net`) connects to a TCP listener "
    "on the host's 127.0.0.1 and sends a line.",
    assertion="nothing arrives (no network beyond its own loopback)",
    control=partial(_tcp, confined=False),
    trick=partial(_tcp, confined=True),
    needs=Needs(plugins=("process",), walls=("network",)),
)
