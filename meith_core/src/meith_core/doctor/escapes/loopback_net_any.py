"""`--net any` (the internet) leads to the host's own services: CONNECT to a loopback
address through the gate, by literal address, as an IPv4-mapped IPv6 address, and by the
name `localhost`."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import tcp_listener
from meith_core.doctor.programs import CONNECT, PROXY_CONNECT, script


def _local(lab: Lab, *, host: str, confined: bool) -> Seen:
    ws = lab.dir("net-any")
    with tcp_listener() as (port, got):
        agent = lab.agent(ws, net=("any",), confined=confined)
        if confined:
            said = agent.run(f"{script(ws, 'p.py', PROXY_CONNECT)} {host} {port}")["stdout"]
        else:
            said = agent.run(f"{script(ws, 'c.py', CONNECT)} tcp 127.0.0.1 {port}")["stdout"]
    return Seen(bool(got), f"{host}: {said.strip()}; the listener received {got!r}")


def entry(host: str, suffix: str, how: str) -> Entry:
    return Entry(
        id=f"loopback-net-any{suffix}",
        wall="host-loopback",
        attack=f"A database listens on the host's 127.0.0.1:PORT; an agent holding `starts-process "
        f"--cwd WS --net any` sends `CONNECT {how}:PORT` to its proxy.",
        assertion="refused: a local address is reached only through a rule that names it",
        control=partial(_local, host=host, confined=False),
        trick=partial(_local, host=host, confined=True),
        needs=Needs(plugins=("process",), walls=("network",)),
    )


ENTRY = entry("127.0.0.1", "", "127.0.0.1")
