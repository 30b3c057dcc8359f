"""A confined process asks its gate for a destination its grant does not name."""

from __future__ import annotations

import json
from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import tcp_listener
from meith_core.doctor.programs import CONNECT, PROXY_CONNECT, script


def _other(lab: Lab, *, confined: bool) -> Seen:
    ws = lab.dir("unnamed")
    with tcp_listener() as (allowed, _), tcp_listener() as (other, got):
        agent = lab.agent(ws, net=(f"127.0.0.1:{allowed}",), confined=confined)
        if not confined:
            said = agent.run(f"{script(ws, 'c.py', CONNECT)} tcp 127.0.0.1 {other}")["stdout"]
            return Seen(bool(got), f"{said.strip()}; the listener received {got!r}")
        said = agent.run(f"{script(ws, 'p.py', PROXY_CONNECT)} 127.0.0.1 {other}")["stdout"]
    audited = [
        r
        for r in lab.audit_records()
        if r.get("outcome") == "NETWORK_REFUSED" and f"127.0.0.1:{other}" in json.dumps(r)
    ]
    evidence = (
        f"{said.strip()}; the listener received {got!r}; {len(audited)} NETWORK_REFUSED record(s)"
    )
    return Seen(bool(got) or not audited, evidence)


ENTRY = Entry(
    id="network-unnamed-destination",
    wall="network",
    attack="An agent holding `starts-process --cwd WS --net 127.0.0.1:A` sends `CONNECT "
    "127.0.0.1:B` to its proxy.",
    assertion="refused (403), nothing arrives at B, and the refusal is in the audit trail "
    "(NETWORK_REFUSED)",
    control=partial(_other, confined=False),
    trick=partial(_other, confined=True),
    needs=Needs(plugins=("process",), walls=("network",)),
)
