"""The floor: a bare asyncio NDJSON server over a Unix socket.

It answers every `tool_call` frame with a `tool_result` frame carrying the call's arguments,
parsed and serialised with the stdlib json module, so the meith clients drive it exactly as
they drive `meith serve`. No validation, no permissions, no audit, no task per call: the cost
of the socket, the event loop and JSON, nothing else.

    python _core_echo_server.py SOCKET_PATH      (prints "listening" once ready)
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys


class EchoProtocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.buf = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        lines = (self.buf + data).split(b"\n")
        self.buf = lines.pop()
        out = []
        for line in lines:
            if not line.strip():
                continue
            msg = json.loads(line)
            reply = {
                "type": "tool_result",
                "protocol": 1,
                "requestId": msg.get("requestId"),
                "result": {"ok": True, "content": msg.get("arguments")},
            }
            out.append(json.dumps(reply, separators=(",", ":")).encode() + b"\n")
        if out:
            self.transport.write(b"".join(out))


async def main(path: str) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    server = await loop.create_unix_server(EchoProtocol, path)
    os.chmod(path, 0o600)
    print("listening", flush=True)
    await stop.wait()
    server.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
