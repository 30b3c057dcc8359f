"""The port forwarder made the runtime's own socket: a confined dev server listens on a port,
and once the host's 127.0.0.1:PORT is forwarded it swaps the forwarder's socket (in its own
temporary directory) for a link to the runtime's socket. Whoever connects to 127.0.0.1:PORT
then speaks to the runtime with the runtime itself as the peer."""

from __future__ import annotations

import json
import socket

from meith_core.doctor.agent import until
from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import connectable, free_port, local_user
from meith_core.doctor.programs import script

_SWAP = """
import os, socket, sys, time
port, target, go = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.socket()
s.bind(("127.0.0.1", port))
s.listen(8)
print("listening", flush=True)
while not os.path.exists(go):
    time.sleep(0.05)
ports = os.path.join(os.environ.get("TMPDIR", "/tmp"), "ports.sock")
try:
    os.rename(ports, ports + ".old")
    os.symlink(target, ports)
    print("swapped", flush=True)
except OSError as exc:
    print("refused", exc, flush=True)
time.sleep(600)
"""


def _swap(lab: Lab) -> Seen:
    ws = lab.dir("forwarder")
    port = free_port()
    agent = lab.agent(ws)
    go = ws / "go"
    dev = agent.start(
        f"{script(ws, 'swap.py', _SWAP)} {port} {lab.runtime.socket} {go}", ports=[port]
    )
    until(lambda: connectable(port), 30, f"127.0.0.1:{port} to be forwarded")
    go.touch()
    said = until(
        lambda: any(w in agent.logs(dev) for w in ("swapped", "refused")) and agent.logs(dev),
        30,
        "the swap",
    )
    frames = _hello(port)
    served = any(f.get("type") == "welcome" for f in frames)
    return Seen(
        served,
        f"{said.strip()}; 127.0.0.1:{port} answered a cli hello with {json.dumps(frames)[:500]}",
    )


def _hello(port: int) -> list[dict[str, object]]:
    """The frames 127.0.0.1:`port` answers a `cli` hello with (until its welcome, at most a
    few)."""
    hello = {"type": "hello", "protocol": 1, "clientInfo": {"caller": "cli", "cwd": "/"}}
    frames: list[dict[str, object]] = []
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(json.dumps(hello).encode() + b"\n")
            data = b""
            while len(frames) < 3 and not any(f.get("type") == "welcome" for f in frames):
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
                while b"\n" in data:
                    line, data = data.split(b"\n", 1)
                    try:
                        frame = json.loads(line)
                    except ValueError:
                        frame = {"bytes": line[:100].decode(errors="replace")}
                    frames.append(frame if isinstance(frame, dict) else {"value": frame})
    except OSError as exc:
        frames.append({"error": str(exc)})
    return frames


ENTRY = Entry(
    id="ports-forwarder-swap",
    wall="ports",
    attack="An agent holding `starts-process --cwd WS` starts a dev server that listens on "
    "PORT; once 127.0.0.1:PORT is open on the host, it replaces `$TMPDIR/ports.sock` with a "
    "link to the runtime's socket. The doctor then sends a `cli` hello to 127.0.0.1:PORT (the dev server was started "
    "with `ports: [PORT]`).",
    assertion="no runtime answers there (the forwarder's endpoint is not reachable by path, "
    "and the runtime never admits itself as a peer)",
    control=local_user,
    trick=_swap,
    needs=Needs(plugins=("process",), walls=("network",)),
)
