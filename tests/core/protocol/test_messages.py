"""pydantic models of every client and server message of the protocol."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from meith_core import ErrorCode
from meith_core.protocol.events import (
    ArtifactEvent,
    EventKind,
    LogEvent,
    PartialTextEvent,
    ProgressEvent,
)
from meith_core.protocol.messages import (
    CancelToolCall,
    ErrorMessage,
    ListTools,
    ToolCall,
    ToolEventMessage,
    ToolResultMessage,
    ToolsList,
    client_message_adapter,
    server_message_adapter,
)


def client(data: dict[str, Any]) -> Any:
    return client_message_adapter.validate_python(data)


def server(data: dict[str, Any]) -> Any:
    return server_message_adapter.validate_python(data)


# -- client -> server -------------------------------------------------------------------


def test_list_tools_defaults_client_info_to_cli() -> None:
    msg = client({"type": "list_tools"})
    assert isinstance(msg, ListTools)
    assert msg.clientInfo.caller == "cli"
    assert msg.protocol is None


def test_tool_call_parses_every_field() -> None:
    msg = client(
        {
            "type": "tool_call",
            "protocol": 1,
            "requestId": "req_ab12cd34ef56",
            "toolName": "git_status",
            "arguments": {"cwd": "/w"},
            "clientInfo": {
                "caller": "plugin",
                "cwd": "/w",
                "sessionId": "ignored",
                "spaceId": "space_1",
                "tabId": "btab_1",
            },
            "timeoutMs": 5000,
        }
    )
    assert isinstance(msg, ToolCall)
    assert (msg.requestId, msg.toolName, msg.arguments, msg.timeoutMs) == (
        "req_ab12cd34ef56",
        "git_status",
        {"cwd": "/w"},
        5000,
    )
    info = msg.clientInfo
    assert (info.caller, info.cwd, info.sessionId, info.spaceId, info.tabId) == (
        "plugin",
        "/w",
        "ignored",
        "space_1",
        "btab_1",
    )


def test_tool_call_defaults_arguments_and_client_info() -> None:
    msg = client({"type": "tool_call", "requestId": "r", "toolName": "t"})
    assert msg.arguments == {}
    assert msg.clientInfo.caller == "cli"
    assert msg.timeoutMs is None


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "tool_call", "toolName": "t"},  # requestId required
        {"type": "tool_call", "requestId": "", "toolName": "t"},
        {"type": "tool_call", "requestId": "r"},  # toolName required
        {"type": "tool_call", "requestId": "r", "toolName": "t", "arguments": [1]},
        {"type": "tool_call", "requestId": "r", "toolName": "t", "timeoutMs": 0},
        {"type": "tool_call", "requestId": "r", "toolName": "t", "timeoutMs": -5},
        {"type": "tool_call", "requestId": "r", "toolName": "t", "timeoutMs": 2**40},
        {"type": "cancel_tool_call"},
    ],
)
def test_invalid_client_messages_are_rejected(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        client(bad)


def test_cancel_tool_call_parses() -> None:
    msg = client({"type": "cancel_tool_call", "requestId": "req_1", "protocol": 1})
    assert isinstance(msg, CancelToolCall)
    assert msg.requestId == "req_1"


@pytest.mark.parametrize("kind", ["tool_result", "shutdown", "", None, 3])
def test_an_unknown_client_message_type_is_rejected(kind: object) -> None:
    with pytest.raises(ValidationError):
        client({"type": kind, "requestId": "r"})


def test_a_client_message_without_type_is_rejected() -> None:
    with pytest.raises(ValidationError):
        client({"requestId": "r", "toolName": "t"})


# -- server -> client -------------------------------------------------------------------


def test_tools_list_parses_descriptors() -> None:
    msg = server(
        {
            "type": "tools_list",
            "protocol": 1,
            "tools": [
                {
                    "name": "echo",
                    "description": "Echo.",
                    "inputSchema": {"type": "object"},
                    "capabilities": ["read-only"],
                    "plugin": "app",
                    "timeoutMs": 30000,
                },
                {"name": "bare", "description": "d", "inputSchema": {}},
            ],
        }
    )
    assert isinstance(msg, ToolsList)
    assert [t.name for t in msg.tools] == ["echo", "bare"]
    assert msg.tools[1].capabilities == []


@pytest.mark.parametrize(
    ("event", "model"),
    [
        ({"kind": "progress", "message": "half", "fraction": 0.5}, ProgressEvent),
        ({"kind": "progress"}, ProgressEvent),
        ({"kind": "log", "message": "m"}, LogEvent),
        ({"kind": "log", "level": "warn", "message": "m"}, LogEvent),
        ({"kind": "partial_text", "text": "tok"}, PartialTextEvent),
        (
            {"kind": "artifact", "mimeType": "image/png", "name": "s.png", "path": "/a"},
            ArtifactEvent,
        ),
        ({"kind": "artifact", "mimeType": "text/plain", "dataBase64": "aGk="}, ArtifactEvent),
    ],
)
def test_tool_event_parses_each_event_kind(event: dict[str, Any], model: type) -> None:
    msg = server({"type": "tool_event", "requestId": "r", "event": event})
    assert isinstance(msg, ToolEventMessage)
    assert isinstance(msg.event, model)
    assert msg.event.kind in set(EventKind)


def test_the_four_event_kinds() -> None:
    assert {k.value for k in EventKind} == {"progress", "log", "partial_text", "artifact"}


@pytest.mark.parametrize(
    "event",
    [
        {"kind": "progress", "fraction": 1.5},
        {"kind": "log", "level": "fatal", "message": "m"},
        {"kind": "partial_text"},
        {"kind": "artifact"},
        {"kind": "explosion"},
    ],
)
def test_invalid_tool_events_are_rejected(event: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        server({"type": "tool_event", "requestId": "r", "event": event})


def test_tool_result_parses_success_and_failure() -> None:
    ok = server({"type": "tool_result", "requestId": "r", "result": {"ok": True, "content": [1]}})
    assert isinstance(ok, ToolResultMessage)
    assert ok.result.ok
    assert ok.result.content == [1]
    failed = server(
        {
            "type": "tool_result",
            "requestId": "r",
            "result": {
                "ok": False,
                "error": {"code": "TIMEOUT", "message": "late", "details": {"a": 1}},
                "diagnostics": [{"level": "warn", "message": "w"}],
                "meta": {"k": 1},
            },
        }
    )
    assert failed.result.error.code is ErrorCode.TIMEOUT
    assert failed.result.diagnostics[0].level == "warn"


def test_error_message_defaults_to_protocol_error_and_may_omit_request_id() -> None:
    msg = server({"type": "error", "message": "Malformed JSON frame ignored"})
    assert isinstance(msg, ErrorMessage)
    assert msg.code is ErrorCode.PROTOCOL_ERROR
    assert msg.requestId is None


def test_an_unknown_server_message_type_is_rejected() -> None:
    with pytest.raises(ValidationError):
        server({"type": "tool_call", "requestId": "r", "toolName": "t"})
