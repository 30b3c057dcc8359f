"""`meith mcp` over stdio, driven by the MCP SDK's Client in both protocol eras, against a real
`meith serve` with the real plugins."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from tests.harness import wait_until
from tests.mcp.conftest import ERAS, audit_records, elicit_answer, json_answer, stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.parametrize("era", ERAS)]


def _git_repo(path: Path) -> Path:
    path.mkdir()
    for argv in (
        ["git", "init", "-q", "-b", "main"],
        [
            "git",
            "-c",
            "user.email=t@example.com",
            "-c",
            "user.name=T",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "first",
        ],
    ):
        subprocess.run(argv, cwd=path, check=True, capture_output=True)
    (path / "new.txt").write_text("hello\n")
    return path


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def test_list_has_explicit_annotations_from_capabilities(agent_server: Any, era: str) -> None:
    srv = agent_server()
    async with stdio_client(srv, mode=era) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        names = [t.name for t in (await client.list_tools()).tools]
    assert names == sorted(names)
    for tool in tools.values():
        a = tool.annotations
        assert a is not None
        assert None not in (
            a.read_only_hint,
            a.destructive_hint,
            a.idempotent_hint,
            a.open_world_hint,
        )
    echo = tools["mcptest_echo"].annotations
    assert echo is not None
    assert echo.read_only_hint is True
    assert echo.destructive_hint is False
    assert tools["git_status"].annotations.read_only_hint is True  # type: ignore[union-attr]
    network = tools["get_network_logs"].annotations
    assert network is not None
    assert network.open_world_hint is True
    assert network.read_only_hint is False
    # A privileged tool of a plugin nobody approved is not offered.
    assert "mcptest_write" not in tools
    assert tools["git_status"].input_schema["type"] == "object"


async def test_git_read_in_the_bridge_cwd(agent_server: Any, era: str, tmp_path: Path) -> None:
    srv = agent_server()
    repo = _git_repo(tmp_path / "repo")
    async with stdio_client(srv, "--cwd", str(repo), mode=era) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        result = await client.call_tool("git_status", {})
    assert result.is_error is False, _text(result)
    # The model reads short-status lines, and only them: no structured JSON beside them that
    # a client could hand the model instead (Claude Code does), no output schema obliging one.
    assert result.structured_content is None
    assert _text(result).splitlines()[0] == "## main"
    assert "?? new.txt" in _text(result).splitlines()
    assert all(t.output_schema is None for t in tools.values())


async def test_structured_adds_the_machine_form_beside_the_text(
    agent_server: Any, era: str, tmp_path: Path
) -> None:
    srv = agent_server()
    srv.approve("process")
    repo = _git_repo(tmp_path / "repo")
    async with stdio_client(srv, "--cwd", str(repo), "--structured", mode=era) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        status = await client.call_tool("git_status", {})
        listed = await client.call_tool("list_dev_servers", {})
    assert Path(status.structured_content["root"]).resolve() == repo.resolve()
    assert status.structured_content["branch"] == "main"
    assert _text(status).splitlines()[0] == "## main"  # the text is still the model's
    # A list is wrapped in an object, as its declared output schema says (the SDK client
    # checked the result against it).
    assert tools["list_dev_servers"].output_schema["properties"]["result"]["type"] == "array"
    assert listed.structured_content == {"result": []}
    assert json.loads(_text(listed)) == listed.structured_content


async def test_unknown_tool_is_a_protocol_error_and_failures_are_results(
    agent_server: Any, era: str
) -> None:
    srv = agent_server()
    async with stdio_client(srv, mode=era) as client:
        with pytest.raises(MCPError):
            await client.call_tool("no_such_tool", {})
        bad = await client.call_tool("mcptest_echo", {"nope": 1})
        assert bad.is_error is True
        assert _text(bad).startswith("VALIDATION_ERROR")
        ok = await client.call_tool("mcptest_echo", {"value": "after"})
    assert json_answer(ok) == {"value": "after", "caller": "agent"}


async def test_privileged_call_denied_then_approved_then_declined(
    agent_server: Any, era: str, marks: Path
) -> None:
    srv = agent_server()
    srv.approve("mcptest")
    async with stdio_client(srv, mode=era, name="careful-agent") as client:
        denied = await client.call_tool("mcptest_write", {"name": "w0"})
    assert denied.is_error is True
    assert "PERMISSION_DENIED" in _text(denied)
    assert "meith grants add --caller agent --agent careful-agent" in _text(denied)
    assert not (marks / "w0").exists()

    seen: list[str] = []
    async with stdio_client(
        srv, mode=era, name="careful-agent", elicitation_callback=elicit_answer("allow_once", seen)
    ) as client:
        allowed = await client.call_tool("mcptest_write", {"name": "w1"})
    assert allowed.is_error is False, _text(allowed)
    assert (marks / "w1").exists()
    assert "mcptest_write" in seen[0]
    assert "writes-files" in seen[0]
    assert "careful-agent" in seen[0]

    async with stdio_client(
        srv, mode=era, name="careful-agent", elicitation_callback=elicit_answer(None)
    ) as client:
        declined = await client.call_tool("mcptest_write", {"name": "w2"})
    assert declined.is_error is True
    assert "PERMISSION_DENIED" in _text(declined)
    assert not (marks / "w2").exists()
    writes = [r for r in audit_records(srv) if r.get("toolName") == "mcptest_write"]
    assert [r["decision"] for r in writes] == ["deny", "allow", "deny"]
    assert "careful-agent" in writes[1]["reason"]
    # Who answered, as the bridge reports it: the person, and a decline reads as theirs.
    assert writes[1]["reason"] == (
        "approved once by the user at the MCP client "
        "(reported by the calling agent connection 'careful-agent')"
    )
    assert writes[2]["reason"] == (
        "denied by the user at the MCP client, who declined "
        "(reported by the calling agent connection 'careful-agent')"
    )


async def test_a_call_to_an_unapproved_plugin_is_refused_by_the_runtime_and_audited(
    agent_server: Any, era: str, marks: Path
) -> None:
    """Not listed is not enough: an agent that calls an unlisted privileged tool anyway is
    refused by the runtime's provider gate, so the refusal is in the audit trail."""
    srv = agent_server()
    async with stdio_client(srv, mode=era, name="eager-agent") as client:
        denied = await client.call_tool("mcptest_write", {"name": "u0"})
    assert denied.is_error is True
    assert "meith plugins approve mcptest" in _text(denied)
    assert "meith grants add --caller agent --agent eager-agent" in _text(denied)
    assert not (marks / "u0").exists()
    [record] = [r for r in audit_records(srv) if r.get("toolName") == "mcptest_write"]
    assert (record["decision"], record["caller"], record["label"]) == (
        "deny",
        "agent",
        "eager-agent",
    )


async def test_allow_for_session_covers_the_next_call(
    agent_server: Any, era: str, marks: Path
) -> None:
    srv = agent_server()
    srv.approve("mcptest")
    asked: list[str] = []
    async with stdio_client(
        srv, mode=era, elicitation_callback=elicit_answer("allow_session", asked)
    ) as client:
        first = await client.call_tool("mcptest_write", {"name": "s1"})
        second = await client.call_tool("mcptest_write", {"name": "s2"})
    assert first.is_error is False
    assert second.is_error is False
    assert len(asked) == 1


async def test_agent_grant_applies_to_its_agent_only(
    agent_server: Any, era: str, marks: Path
) -> None:
    srv = agent_server()
    srv.approve("mcptest")
    proc = srv.cli(
        "grants",
        "add",
        "--caller",
        "agent",
        "--agent",
        "alice",
        "--capability",
        "writes-files",
        "--tool",
        "mcptest_write",
    )
    assert proc.returncode == 0, proc.stderr
    async with stdio_client(srv, mode=era, name="alice") as client:
        alice = await client.call_tool("mcptest_write", {"name": "alice"})
    async with stdio_client(srv, mode=era, name="bob") as client:
        bob = await client.call_tool("mcptest_write", {"name": "bob"})
    assert alice.is_error is False, _text(alice)
    assert bob.is_error is True
    assert "PERMISSION_DENIED" in _text(bob)
    assert (marks / "alice").exists()
    assert not (marks / "bob").exists()


async def test_progress_logs_and_artifacts(agent_server: Any, era: str) -> None:
    srv = agent_server()
    progress: list[tuple[float, float | None, str | None]] = []
    logs: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(str(params.data))

    async with stdio_client(srv, mode=era, logging_callback=on_log, log_level="info") as client:
        result = await client.call_tool(
            "mcptest_steps", {"count": 3}, progress_callback=on_progress
        )
    assert result.is_error is False
    assert [p[0] for p in progress] == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert progress[-1][2] == "step 3"
    assert logs == ["did step 1", "did step 2", "did step 3"]
    kinds = [b.type for b in result.content]
    assert kinds[0] == "text"
    assert "resource" in kinds


async def test_cancellation_stops_the_tool(agent_server: Any, era: str, marks: Path) -> None:
    srv = agent_server()
    async with stdio_client(srv, mode=era) as client:
        async with anyio.create_task_group() as tg:

            async def long_call() -> None:
                await client.call_tool("mcptest_sleep", {"seconds": 300, "marker": "nap"})

            tg.start_soon(long_call)
            await anyio.to_thread.run_sync(
                lambda: wait_until(lambda: (marks / "nap.started").exists(), timeout=60)
            )
            tg.cancel_scope.cancel()
        assert await anyio.to_thread.run_sync(
            lambda: wait_until(lambda: (marks / "nap.cancelled").exists(), timeout=60)
        )
        after = await client.call_tool("mcptest_echo", {"value": 1})
    assert after.is_error is False
    naps = [r for r in audit_records(srv) if r.get("toolName") == "mcptest_sleep"]
    assert len(naps) == 1
    assert "cancel" in str(naps[0]).lower()


async def test_a_plugin_printing_to_stdout_does_not_corrupt_the_stream(
    agent_server: Any, era: str
) -> None:
    srv = agent_server()
    async with stdio_client(srv, mode=era) as client:
        printed = await client.call_tool("mcptest_print", {"lines": 500})
        after = await client.call_tool("mcptest_echo", {"value": "still fine"})
    assert json_answer(printed) == {"printed": 500}
    assert json_answer(after) == {"value": "still fine", "caller": "agent"}


async def test_one_audit_record_per_call_with_agent_and_label(agent_server: Any, era: str) -> None:
    srv = agent_server()
    async with stdio_client(srv, mode=era, name="audited-agent") as client:
        for i in range(3):
            await client.call_tool("mcptest_echo", {"value": f"audit-{era}-{i}"})
    records = [r for r in audit_records(srv) if r.get("toolName") == "mcptest_echo"]
    assert len(records) == 3
    for record in records:
        assert record["caller"] == "agent"
        assert record["label"] == "audited-agent"
    assert len({r["requestId"] for r in records}) == 3
    assert len({r["sessionId"] for r in records}) == 1


async def test_list_changed_after_plugins_approve(agent_server: Any, era: str) -> None:
    srv = agent_server()
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with stdio_client(srv, mode=era, message_handler=on_message) as client:
        before = {t.name for t in (await client.list_tools()).tools}
        assert "mcptest_write" not in before
        if era == "legacy":
            srv.approve("mcptest")
            with anyio.fail_after(60):
                await changed.wait()
        else:
            async with client.listen(tools_list_changed=True) as sub:
                srv.approve("mcptest")
                with anyio.fail_after(60):
                    await sub.__anext__()
        after = {t.name for t in (await client.list_tools()).tools}
    assert "mcptest_write" in after


async def test_read_only_and_selection_flags(agent_server: Any, era: str) -> None:
    srv = agent_server()
    srv.approve("mcptest")
    async with stdio_client(srv, "--read-only", "--plugins", "mcptest", mode=era) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        refused = await client.call_tool("mcptest_write", {"name": "ro"})
        with pytest.raises(MCPError):
            await client.call_tool("no_such_tool", {})
    assert names == {"mcptest_echo", "mcptest_sleep", "mcptest_steps", "mcptest_print"}
    assert refused.is_error is True
    assert "--read-only" in _text(refused)
    async with stdio_client(srv, "--tools", "git_s*,mcptest_e*", mode=era) as client:
        names = {t.name for t in (await client.list_tools()).tools}
    assert names == {"git_status", "mcptest_echo"}
