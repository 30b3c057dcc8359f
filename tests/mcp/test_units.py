"""The bridge's pure parts: tool mapping and selection, content conversion, approval answers,
labels, HTTP binding; and agent-name grant matching in the runtime's permission service."""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import os
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from meith_core import CallerInfo, CallerKind, Capability, ErrorCode, Runtime, ToolContext
from meith_core.mcp import call_approval
from meith_core.mcp.content import to_call_result
from meith_core.mcp.http import is_loopback, parse_bind
from meith_core.mcp.profiles import Selection
from meith_core.mcp.sessions import label_of
from meith_core.mcp.tools import annotations_for, offered, to_mcp_tool, why_hidden
from meith_core.policy.grants import Grant, StandingGrants, new_grant
from meith_core.protocol.call_approval import (
    ApprovalAnswer,
    ApprovalRequest,
    call_approval_timeout_s,
)
from meith_core.serve.prompt import TerminalApprover
from tests.core.support import NoArgs, make_tool


def desc(name: str, *caps: str, plugin: str = "p", **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"{name} does things",
        "inputSchema": {"type": "object", "properties": {}},
        "capabilities": list(caps),
        "plugin": plugin,
        **extra,
    }


@pytest.mark.parametrize(
    ("caps", "expected"),
    [
        (["read-only"], (True, False, False)),
        (["read-only", "accesses-network"], (False, False, True)),
        (["controls-browser"], (False, False, True)),
        (["writes-files", "destructive"], (False, True, False)),
        (["starts-process"], (False, False, False)),
        ([], (False, False, False)),
    ],
)
def test_annotations_come_from_capabilities(caps: list[str], expected: tuple[bool, ...]) -> None:
    a = annotations_for(desc("any_name_read_only", *caps))
    assert (a.read_only_hint, a.destructive_hint, a.open_world_hint) == expected
    assert a.idempotent_hint is False


def test_idempotent_comes_from_the_descriptor_and_tool_shape() -> None:
    tool = to_mcp_tool(
        desc("t", "read-only", idempotent=True, outputSchema={"type": "array", "items": {}})
    )
    assert tool.annotations is not None
    assert tool.annotations.idempotent_hint is True
    # Not an object schema: carried wrapped, as the structured content of such a result is.
    assert tool.output_schema == {
        "type": "object",
        "properties": {"result": {"type": "array", "items": {}}},
        "required": ["result"],
    }
    assert "Capabilities: read-only." in (tool.description or "")
    with_output = to_mcp_tool(desc("u", "read-only", outputSchema={"type": "object"}))
    assert with_output.output_schema == {"type": "object"}


def test_selection_and_approval_decide_what_is_offered() -> None:
    tools = [
        desc("z_read", "read-only", plugin="git"),
        desc("a_write", "writes-files", plugin="git", approved=False),
        desc("b_write", "writes-files", plugin="git", approved=True),
        desc("core_write", "writes-files", plugin="core"),
        desc("other", "read-only", plugin="process"),
        desc("bad name!", "read-only"),
    ]
    assert list(offered(tools, Selection())) == ["b_write", "core_write", "other", "z_read"]
    assert list(offered(tools, Selection.parse("git", None, False))) == ["b_write", "z_read"]
    assert list(offered(tools, Selection.parse(None, "z_*, oth*", False))) == ["other", "z_read"]
    assert list(offered(tools, Selection.parse(None, "all", True))) == ["other", "z_read"]
    hidden = why_hidden(tools[1], Selection())
    assert hidden is not None
    assert "meith plugins approve git" in hidden


def test_tool_profiles_select_the_tools_of_one_kind_of_work() -> None:
    names = {
        "workspace_read_file": "files",
        "workspace_apply_patch": "files",
        "run_command": "process",
        "start_dev_server": "process",
        "git_status": "git",
        "git_blame": "git",
        "navigate": "browser",
        "third_party": "extra",
    }
    tools = [desc(n, "read-only", plugin=p) for n, p in names.items()]
    default = Selection.parse(None, None, False)
    assert list(offered(tools, default)) == [
        "git_status",
        "run_command",
        "workspace_apply_patch",
        "workspace_read_file",
    ]
    assert "git_blame" in offered(tools, Selection.parse(None, "coding,git", False))
    browser = offered(tools, Selection.parse(None, "browser", False))
    assert list(browser) == ["navigate", "start_dev_server"]
    assert len(offered(tools, Selection.parse(None, "all", False))) == len(tools)
    # A profile and a glob together; --plugins alone offers all of those plugins' tools.
    mixed = Selection.parse(None, "coding,third_*", False)
    assert "third_party" in offered(tools, mixed)
    assert list(offered(tools, Selection.parse("git", None, False))) == ["git_blame", "git_status"]
    hidden = why_hidden(desc("git_blame", "read-only", plugin="git"), default)
    assert hidden == (
        '"git_blame" is not among the tools this bridge offers (--tools coding); the user can '
        "widen it: meith mcp --tools coding,git (or --tools all)"
    )


def test_results_become_structured_content_with_text_and_namespaced_meta() -> None:
    result = to_call_result(
        {
            "ok": True,
            "content": {"a": 1},
            "meta": {"truncated": True},
            "diagnostics": [{"level": "warn", "message": "w"}],
        },
        [],
        None,
    )
    assert result.structured_content == {"a": 1}
    assert isinstance(result.content[0], types.TextContent)
    assert result.content[0].text == '{"a":1}'  # compact: no indentation spent on a model
    assert result.meta == {
        "dev.meith/meta": {"truncated": True},
        "dev.meith/diagnostics": [{"level": "warn", "message": "w"}],
    }
    listed = to_call_result({"ok": True, "content": [1, 2]}, [], None)
    assert listed.structured_content == {"result": [1, 2]}
    rendered = to_call_result({"ok": True, "content": {"a": 1}, "text": "a is 1"}, [], None)
    assert isinstance(rendered.content[0], types.TextContent)
    assert rendered.content[0].text == "a is 1"  # the tool's own text for a model
    assert rendered.structured_content == {"a": 1}  # and the machine form beside it
    # The text says what the structured content says, not a bare array beside it.
    assert isinstance(listed.content[0], types.TextContent)
    assert json.loads(listed.content[0].text) == listed.structured_content
    # Without --structured only the text goes to the client, and no output schema is offered.
    text_only = to_call_result({"ok": True, "text": "a is 1"}, [], None, structured=False)
    assert (text_only.structured_content, text_only.content[0].text) == (None, "a is 1")
    plain = to_call_result({"ok": True, "content": [1, 2]}, [], None, structured=False)
    assert (plain.structured_content, json.loads(plain.content[0].text)) == (
        None,
        {"result": [1, 2]},
    )
    schema = {"type": "object", "properties": {}}
    described = desc("u", "read-only", outputSchema=schema)
    assert to_mcp_tool(described, structured=False).output_schema is None
    assert to_mcp_tool(described).output_schema == schema
    failed = to_call_result(
        {"ok": False, "error": {"code": "TIMEOUT", "message": "too slow"}}, [], None
    )
    assert failed.is_error is True
    assert isinstance(failed.content[0], types.TextContent)
    assert failed.content[0].text == "TIMEOUT: too slow"
    assert failed.meta == {"dev.meith/error": {"code": "TIMEOUT", "message": "too slow"}}


def test_artifacts_become_images_or_resources(tmp_path: Path) -> None:
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    png = artifacts / "shot.png"
    png.write_bytes(b"\x89PNG fake")
    outside = tmp_path / "secret.png"
    outside.write_bytes(b"not yours")
    events = [
        {"kind": "artifact", "mimeType": "image/png", "name": "shot.png", "path": str(png)},
        {"kind": "artifact", "mimeType": "image/png", "name": "s", "path": str(outside)},
        {"kind": "artifact", "mimeType": "text/plain", "name": "n.txt", "dataBase64": "aGk="},
    ]
    blocks = to_call_result({"ok": True, "content": "x"}, events, artifacts).content
    image, link, embedded = blocks[1], blocks[2], blocks[3]
    assert isinstance(image, types.ImageContent)
    assert base64.b64decode(image.data) == b"\x89PNG fake"
    assert image.mime_type == "image/png"
    # A path outside the artifacts directory is never read back, only linked.
    assert isinstance(link, types.ResourceLink)
    assert link.uri == outside.as_uri()
    assert isinstance(embedded, types.EmbeddedResource)


@pytest.mark.parametrize(
    ("answer", "decision"),
    [
        (types.ElicitResult(action="accept", content={"decision": "allow_once"}), "allow_once"),
        (
            types.ElicitResult(action="accept", content={"decision": "allow_session"}),
            "allow_session",
        ),
        (types.ElicitResult(action="accept", content={"decision": "deny"}), "deny"),
        (types.ElicitResult(action="accept", content={"decision": "allow_forever"}), "deny"),
        (types.ElicitResult(action="accept", content={}), "deny"),
        (types.ElicitResult(action="decline"), "deny"),
        (types.ElicitResult(action="cancel"), "deny"),
        (None, "deny"),
    ],
)
def test_only_an_explicit_allow_allows(answer: types.ElicitResult | None, decision: str) -> None:
    assert call_approval.decision_of(answer) == decision


def test_who_answered_says_the_user_and_a_decline_is_theirs() -> None:
    accepted = types.ElicitResult(action="accept", content={"decision": "deny"})
    assert call_approval.answered_by(accepted) == "the user at the MCP client"
    declined = call_approval.answered_by(types.ElicitResult(action="decline"))
    assert declined == "the user at the MCP client, who declined"
    assert "dismissed" in call_approval.answered_by(types.ElicitResult(action="cancel"))
    assert call_approval.answered_by(None).startswith("nobody")


def test_the_elicitation_says_who_what_where_and_redacted_args() -> None:
    message = call_approval.elicitation_message(
        {
            "label": "claude-code",
            "toolName": "git_commit",
            "plugin": "git",
            "capabilities": ["writes-files"],
            "cwd": "/src/app",
            "arguments": {"message": "x", "token": "[redacted]"},
        }
    )
    for part in ("claude-code", "git_commit", "writes-files", "/src/app", "[redacted]"):
        assert part in message
    schema = call_approval.elicitation_schema()["properties"]["decision"]
    assert [c["const"] for c in schema["oneOf"]] == ["allow_once", "allow_session", "deny"]


def test_the_elicitation_says_plainly_that_a_process_runs_unconfined() -> None:
    request = {
        "label": "claude-code",
        "toolName": "create_terminal",
        "plugin": "process",
        "capabilities": ["starts-process"],
        "cwd": "/src/app",
        "arguments": {},
    }
    message = call_approval.elicitation_message(request)
    assert "Directory:" not in message  # reads as "confined there"
    assert "NOT confined" in message
    assert "full access" in message
    assert "/src/app" in message
    # The runtime's own sentence wins when it sends one.
    said = call_approval.elicitation_message({**request, "runs": "confined to /src/app"})
    assert "Where: confined to /src/app" in said


@pytest.mark.anyio
async def test_the_serve_prompt_says_plainly_that_a_process_runs_unconfined() -> None:
    read, write = os.pipe()
    os.write(write, b"d\n")
    out = io.StringIO()
    with open(read, closefd=True) as stdin:
        approver = TerminalApprover(stdin=stdin, out=out, timeout_s=10)
        request = ApprovalRequest(
            request_id="r",
            caller=CallerInfo(CallerKind.AGENT, session_id="agent:s"),
            tool_name="start_dev_server",
            plugin_id="process",
            capabilities=(Capability.STARTS_PROCESS,),
            privileged=(Capability.STARTS_PROCESS,),
            cwd="/src/app",
            arguments_summary="{}",
        )
        assert await approver(request) is ApprovalAnswer.DENY
    os.close(write)
    shown = out.getvalue()
    assert "NOT confined" in shown
    assert "it only starts in /src/app" in shown


def test_labels_are_sanitised() -> None:
    assert label_of("Claude Code") == "Claude Code"
    assert label_of("evil\n\x1b[31mname") == "evil[31mname"
    assert label_of("") == "mcp-client"
    assert len(label_of("x" * 500)) == 128


@pytest.mark.parametrize(
    ("value", "expected"),
    [("8765", ("127.0.0.1", 8765)), ("0.0.0.0:1", ("0.0.0.0", 1)), ("[::1]:9", ("::1", 9))],
)
def test_http_bind_parsing(value: str, expected: tuple[str, int]) -> None:
    assert parse_bind(value) == expected


def test_loopback_detection() -> None:
    assert is_loopback("127.0.0.1")
    assert is_loopback("::1")
    assert is_loopback("localhost")
    assert not is_loopback("0.0.0.0")
    assert not is_loopback("192.168.1.2")
    with pytest.raises(ValueError, match="PORT"):
        parse_bind("host:port")


def test_agent_name_grants_round_trip_and_refuse_other_callers(tmp_path: Path) -> None:
    store = StandingGrants(tmp_path / "grants.json")
    grant = store.add(new_grant("agent", ["writes-files"], agent="alice"))
    (loaded,) = StandingGrants(tmp_path / "grants.json").current()
    assert loaded.agent == "alice"
    assert loaded.id == grant.id
    with pytest.raises(ValueError, match="--caller agent"):
        new_grant("cli", ["writes-files"], agent="alice")
    assert isinstance(loaded, Grant)


@pytest.mark.anyio
async def test_an_agent_name_grant_matches_that_agent_only(runtime: Runtime) -> None:
    async def write(ctx: ToolContext, args: NoArgs) -> str:
        return "written"

    runtime.register([make_tool(write, "writes-files")])
    StandingGrants(runtime.home.grants_path).add(
        new_grant("agent", ["writes-files"], agent="alice")
    )
    session = runtime.open_session("agent")
    alice = dataclasses.replace(session, label="alice")
    bob = dataclasses.replace(session, label="bob")
    unnamed: CallerInfo = session
    assert (await runtime.call("write", caller=alice)).ok
    for other in (bob, unnamed):
        denied = await runtime.call("write", caller=other)
        assert denied.error is not None
        assert denied.error.code is ErrorCode.PERMISSION_DENIED
    cli = runtime.open_session("cli")
    assert (await runtime.call("write", caller=cli)).error is not None


def test_the_mcp_page_snippets_are_valid_json() -> None:
    import json
    import re

    page = (Path(__file__).resolve().parents[2] / "docs" / "mcp.md").read_text()
    blocks = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", page, flags=re.S)]
    # The stdio configurations are started for real by tests/docs/test_mcp_client_configs.py;
    # the HTTP one needs a token, so its shape is checked here.
    (http,) = [
        b["mcpServers"]["meith"]
        for b in blocks
        if "url" in b.get("mcpServers", {}).get("meith", {})
    ]
    assert http["url"].endswith("/mcp")
    assert http["headers"]["Authorization"].startswith("Bearer ")


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (None, 60.0),
        ("2", 2.0),
        (" 0.5 ", 0.5),
        ("300", 300.0),
        # A typo must not mean "deny at once" or "wait forever".
        ("0", 60.0),
        ("-5", 60.0),
        ("nan", 60.0),
        ("inf", 60.0),
        ("1e9", 60.0),
        ("sixty", 60.0),
        ("", 60.0),
    ],
)
def test_the_approval_timeout_knob(value: str | None, seconds: float) -> None:
    environ = {} if value is None else {"MEITH_APPROVAL_TIMEOUT_S": value}
    assert call_approval_timeout_s(environ) == seconds
