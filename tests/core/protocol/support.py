"""What the tests of the connection rules share: one connection without a socket, bytes in,
actions out."""

from __future__ import annotations

import json
from typing import Any

from meith_core.protocol.actions import Send, StartCall
from meith_core.protocol.caller import CallerKind, ChildBinding
from meith_core.protocol.connection import Connection
from meith_core.protocol.framing import encode_frame

SID = "socket:test"
CWD = "/runtime/cwd"


def conn(**kwargs: Any) -> Connection:
    return Connection(SID, runtime_cwd=CWD, server_version="9.9", **kwargs)


def feed(c: Connection, *frames: dict[str, Any] | bytes, now: float = 0.0) -> list[Any]:
    data = b"".join(f if isinstance(f, bytes) else encode_frame(f) for f in frames)
    return c.receive_data(data, now)


def call(rid: str = "r", tool: str = "t", **extra: Any) -> dict[str, Any]:
    return {"type": "tool_call", "requestId": rid, "toolName": tool, **extra}


def sent(actions: list[Any]) -> list[dict[str, Any]]:
    return [json.loads(a.data) for a in actions if isinstance(a, Send)]


def started(actions: list[Any]) -> list[StartCall]:
    return [a for a in actions if isinstance(a, StartCall)]


def only_error(actions: list[Any]) -> dict[str, Any]:
    frames = sent(actions)
    assert len(frames) == 1
    assert frames[0]["type"] == "error"
    assert not started(actions)
    return frames[0]


PARENT = ChildBinding(CallerKind.AGENT, "agent:parent", "claude")
