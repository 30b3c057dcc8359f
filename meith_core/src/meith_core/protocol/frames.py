"""Server frames as bytes: one builder per frame type, no I/O, no state.

Hot frames (`tool_result`, `tool_event`) are spliced from pre-encoded parts instead of
building a dict per frame.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from meith_core.protocol.constants import MAX_FRAME_BYTES, PROTOCOL_VERSION
from meith_core.protocol.errors import ErrorCode
from meith_core.protocol.framing import dumps_bytes
from meith_core.protocol.results import ToolResult, error_result

_PROTO: Final = f',"protocol":{PROTOCOL_VERSION}'.encode()


def frame(kind: str, **fields: Any) -> bytes:
    return dumps_bytes({"type": kind, "protocol": PROTOCOL_VERSION, **fields}) + b"\n"


def error_frame(
    request_id: str | None, message: str, code: ErrorCode = ErrorCode.PROTOCOL_ERROR
) -> bytes:
    fields: dict[str, Any] = {} if request_id is None else {"requestId": request_id}
    return frame("error", **fields, code=code.value, message=message)


def event_prefix(request_id: str) -> bytes:
    """Everything of a `tool_event` frame before the event object."""
    return (
        b'{"type":"tool_event"' + _PROTO + b',"requestId":' + dumps_bytes(request_id) + b',"event":'
    )


def too_large_message(tool: str, size: int, narrowing: Sequence[str] = ()) -> str:
    """Why a result was not sent, and how to ask for less: only with arguments the tool has."""
    how = (
        f"narrow the request with {', '.join(narrowing)}"
        if narrowing
        else "this tool has no argument that narrows it"
    )
    return f'The result of "{tool}" is {size} bytes, more than a frame may carry ({MAX_FRAME_BYTES}); {how}'


def result_frame(
    request_id: str,
    tool: str,
    result: ToolResult,
    narrowing: Callable[[], Sequence[str]] | None = None,
) -> bytes:
    """The `tool_result` frame; one too large for a frame becomes an error that names the
    tool's own arguments that ask for less (`narrowing`, asked only then)."""
    body = result.encoded
    if body is None:
        body = dumps_bytes(result.to_wire())
    head = (
        b'{"type":"tool_result"'
        + _PROTO
        + b',"requestId":'
        + dumps_bytes(request_id)
        + b',"result":'
    )
    if len(head) + len(body) + 2 > MAX_FRAME_BYTES:
        names = list(narrowing()) if narrowing is not None else []
        too_big = error_result(
            ErrorCode.TOOL_FAILED,
            too_large_message(tool, len(body), names),
            {"sizeBytes": len(body), "limitBytes": MAX_FRAME_BYTES, "narrowWith": names},
        )
        body = dumps_bytes(too_big.to_wire())
    return head + body + b"}\n"


def tools_list_frame(tools: list[dict[str, Any]]) -> bytes:
    return frame("tools_list", tools=tools)


TOOLS_CHANGED: Final = frame("tools_changed")
PONG: Final = frame("pong")
