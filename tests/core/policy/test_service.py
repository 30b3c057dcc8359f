"""Each invariant of the spec's permission table, as an explicit case, through the real
runtime (CallPipeline + PermissionService + AuditLog on a temporary MEITH_HOME)."""

from __future__ import annotations

from typing import Any

import pytest

from meith_core import CallerInfo, CallerKind, ErrorCode, Runtime, ToolContext
from tests.core.support import NoArgs, TextArgs, make_tool, plugin_class, records_for


class Counter:
    def __init__(self) -> None:
        self.runs = 0


def _writer(counter: Counter) -> Any:
    async def write_file(ctx: ToolContext, args: NoArgs) -> str:
        """Pretends to write a file."""
        counter.runs += 1
        return "written"

    return make_tool(write_file, "writes-files")


def _reader() -> Any:
    async def read_file(ctx: ToolContext, args: NoArgs) -> str:
        """Reads."""
        return "read"

    return make_tool(read_file, "read-only")


def _relay() -> Any:
    async def relay(ctx: ToolContext, args: TextArgs) -> Any:
        """Calls the tool named in `text` as this plugin."""
        return (await ctx.call_tool(args.text)).to_wire()

    return make_tool(relay, input=TextArgs)


def last_record(runtime: Runtime) -> dict[str, Any]:
    return list(runtime.audit.read())[-1]


@pytest.fixture
def counter() -> Counter:
    return Counter()


@pytest.fixture
def files(runtime: Runtime, counter: Counter) -> Runtime:
    """Plugin `files` (approved) provides write_file (writes-files) and read_file."""
    runtime.load_plugin("files", plugin_class(_writer(counter), _reader()))
    runtime.approve_plugin("files")
    return runtime


# -- trusted callers --------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("kind", [CallerKind.RENDERER, CallerKind.INTERNAL])
async def test_renderer_and_internal_callers_are_trusted_for_privileged_tools_and_audited(
    files: Runtime, counter: Counter, kind: CallerKind
) -> None:
    result = await files.call("write_file", caller=kind)
    assert result.ok
    assert counter.runs == 1
    record = last_record(files)
    assert record["caller"] == kind.value
    assert record["decision"] == "allow"
    assert record["reason"] == f"trusted in-process caller ({kind.value})"


# -- agents -----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_an_agent_without_a_session_is_denied_and_audited_as_deny(
    files: Runtime, counter: Counter
) -> None:
    result = await files.call("write_file", caller=CallerInfo(CallerKind.AGENT))
    assert result.error.code is ErrorCode.PERMISSION_DENIED
    assert counter.runs == 0
    record = last_record(files)
    assert record["decision"] == "deny"
    assert record["reason"] == "agent caller without a session"


@pytest.mark.anyio
async def test_an_agent_session_with_a_grant_is_allowed(files: Runtime, counter: Counter) -> None:
    agent = files.open_session("agent")
    assert (await files.call("write_file", caller=agent)).error.code is ErrorCode.PERMISSION_DENIED
    grant = files.grant(agent, ["writes-files"])
    assert (await files.call("write_file", caller=agent)).ok
    assert last_record(files)["reason"] == f"session grant {grant.id}"
    assert counter.runs == 1


# -- plugins as callers -----------------------------------------------------------------


@pytest.mark.anyio
async def test_a_plugin_with_no_approval_record_is_denied(files: Runtime, counter: Counter) -> None:
    files.load_plugin("ghost", plugin_class(_relay()))  # loaded, never approved
    result = await files.call("relay", {"text": "write_file"})
    inner = result.content
    assert inner["error"]["code"] == "PERMISSION_DENIED"
    assert counter.runs == 0
    record = next(r for r in reversed(list(files.audit.read())) if r["toolName"] == "write_file")
    assert record["caller"] == "plugin"
    assert record["pluginId"] == "ghost"
    assert record["decision"] == "deny"
    assert record["reason"] == "plugin ghost is not approved"


@pytest.mark.anyio
async def test_a_plugin_with_an_empty_approval_is_denied(files: Runtime, counter: Counter) -> None:
    files.load_plugin("empty", plugin_class(_relay()))
    files.approve_plugin("empty", [])
    assert files.permissions.plugin_approvals.get("empty").capabilities == ()  # type: ignore[union-attr]
    result = await files.call("relay", {"text": "write_file"})
    assert result.content["error"]["code"] == "PERMISSION_DENIED"
    assert counter.runs == 0
    assert "empty approval" in result.content["error"]["details"]["reason"]


@pytest.mark.anyio
async def test_a_plugin_approved_only_for_read_only_can_read_but_not_write(
    files: Runtime, counter: Counter
) -> None:
    files.load_plugin("reader", plugin_class(_relay()))
    files.approve_plugin("reader", ["read-only"])
    read = await files.call("relay", {"text": "read_file"})
    assert read.content == {"ok": True, "content": "read"}
    write = await files.call("relay", {"text": "write_file"})
    assert write.content["error"]["code"] == "PERMISSION_DENIED"
    assert "lacks capabilities [writes-files]" in write.content["error"]["message"]
    assert counter.runs == 0


@pytest.mark.anyio
async def test_a_plugin_approved_for_writes_files_may_call_a_write_tool(
    files: Runtime, counter: Counter
) -> None:
    # The relay itself only declares read-only; approval is what the user consented to.
    files.load_plugin("trusted_relay", plugin_class(_relay()))
    files.permissions.plugin_approvals.approve(
        "trusted_relay",
        ["read-only", "writes-files"],
        files.plugins.fingerprint_of("trusted_relay") or "",
    )
    result = await files.call("relay", {"text": "write_file"})
    assert result.content == {"ok": True, "content": "written"}
    assert counter.runs == 1


@pytest.mark.anyio
async def test_a_plugin_claim_without_a_bound_identity_gets_read_only_tools_only(
    files: Runtime, counter: Counter
) -> None:
    # What a socket peer claiming `plugin` becomes: no plugin id, so no approval record.
    peer = CallerInfo(CallerKind.PLUGIN, session_id="socket:abc")
    assert (await files.call("read_file", caller=peer)).ok
    denied = await files.call("write_file", caller=peer)
    assert denied.error.code is ErrorCode.PERMISSION_DENIED
    assert "not bound" in denied.error.message
    assert counter.runs == 0


# -- sessions ---------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["agent", "cli"])
async def test_a_revoked_session_is_denied_at_once(
    files: Runtime, counter: Counter, kind: str
) -> None:
    session = files.open_session(kind)
    files.grant(session, ["writes-files"])
    assert (await files.call("write_file", caller=session)).ok
    files.permissions.revoke_session(session.session_id or "")
    result = await files.call("write_file", caller=session)
    assert result.error.code is ErrorCode.PERMISSION_DENIED
    assert last_record(files)["reason"] == f"session {session.session_id} was revoked"
    assert counter.runs == 1
    with pytest.raises(ValueError, match="revoked"):
        files.grant(session, ["writes-files"])  # a revoked session cannot be granted again


@pytest.mark.anyio
async def test_closing_a_session_revokes_its_grants(files: Runtime, counter: Counter) -> None:
    session = files.open_session("agent")
    files.grant(session, ["writes-files"])
    await files.close_session(session)
    assert (await files.call("write_file", caller=session)).error.code is (
        ErrorCode.PERMISSION_DENIED
    )
    assert counter.runs == 0


# -- the CLI ----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_cli_read_only_calls_are_allowed_and_audited_with_secrets_redacted(
    runtime: Runtime,
) -> None:
    class SecretArgs(TextArgs):
        token: str = ""

    async def lookup(ctx: ToolContext, args: SecretArgs) -> dict[str, str]:
        """Returns a secret-looking result."""
        return {"apiKey": "sk-test-secret", "note": "fine"}

    runtime.register(make_tool(lookup, input=SecretArgs))
    cli = runtime.open_session("cli")
    bearer = "Bearer abcdefghijklmnopqrstuvwxyz123456"
    result = await runtime.call("lookup", {"token": bearer, "text": "hi"}, caller=cli)
    assert result.ok
    raw = runtime.audit.path.read_text()
    assert "abcdefghijklmnopqrstuvwxyz123456" not in raw
    assert "sk-test-secret" not in raw
    record = last_record(runtime)
    assert record["caller"] == "cli"
    assert record["sessionId"] == cli.session_id
    assert record["decision"] == "allow"
    assert record["reason"] == "no privileged capability"
    assert '"token":"[REDACTED]"' in record["argsSummary"]
    assert '"apiKey":"[REDACTED]"' in record["resultSummary"]
    assert '"note":"fine"' in record["resultSummary"]


@pytest.mark.anyio
async def test_privileged_cli_calls_without_a_grant_are_denied_and_audited_as_deny(
    files: Runtime, counter: Counter
) -> None:
    cli = files.open_session("cli")
    result = await files.call("write_file", caller=cli, request_id="req_cli_deny")
    assert result.error.code is ErrorCode.PERMISSION_DENIED
    assert "meith grants add" in result.error.message  # says what to do next
    assert counter.runs == 0
    [record] = records_for(files.audit.path, "req_cli_deny")
    assert record["decision"] == "deny"
    assert record["reason"] == "no grant for writes-files"
    assert record["capabilities"] == ["writes-files"]


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["agent", "cli"])
async def test_a_one_use_grant_allows_exactly_one_call(
    files: Runtime, counter: Counter, kind: str
) -> None:
    session = files.open_session(kind)
    files.grant(session, ["writes-files"], tool="write_file", uses=1)
    assert (await files.call("write_file", caller=session)).ok
    second = await files.call("write_file", caller=session)
    assert second.error.code is ErrorCode.PERMISSION_DENIED
    assert counter.runs == 1
    assert files.permissions.session_grants(session.session_id or "") == []


@pytest.mark.anyio
async def test_a_grant_with_n_uses_allows_n_calls(files: Runtime, counter: Counter) -> None:
    session = files.open_session("agent")
    files.grant(session, ["writes-files"], uses=3)
    outcomes = [(await files.call("write_file", caller=session)).ok for _ in range(5)]
    assert outcomes == [True, True, True, False, False]
    assert counter.runs == 3


# -- the provider gate ------------------------------------------------------------------


@pytest.mark.anyio
async def test_an_unapproved_plugins_privileged_tool_is_denied_even_to_trusted_callers(
    runtime: Runtime, counter: Counter
) -> None:
    runtime.load_plugin("files", plugin_class(_writer(counter), _reader()))
    result = await runtime.call("write_file")  # internal: trusted as a caller
    assert result.error.code is ErrorCode.PERMISSION_DENIED
    assert "meith plugins approve files" in result.error.message
    assert result.error.details["gate"] == "provider"
    assert (await runtime.call("read_file")).ok  # read-only tools need no approval
    assert counter.runs == 0


@pytest.mark.anyio
async def test_a_changed_plugin_fingerprint_voids_its_approval(
    meith_home: Any, counter: Counter
) -> None:
    async with Runtime(meith_home, load_plugins=False) as first:
        first.load_plugin("files", plugin_class(_writer(counter)), version="1.0")
        first.approve_plugin("files")
        assert (await first.call("write_file")).ok

    # Same version and tools in a new runtime: the approval still holds.
    async with Runtime(meith_home, load_plugins=False) as same:
        same.load_plugin("files", plugin_class(_writer(counter)), version="1.0")
        assert (await same.call("write_file")).ok

    # A new version of the plugin: void until approved again.
    async with Runtime(meith_home, load_plugins=False) as upgraded:
        upgraded.load_plugin("files", plugin_class(_writer(counter)), version="1.1")
        result = await upgraded.call("write_file")
        assert result.error.code is ErrorCode.PERMISSION_DENIED
        assert "void" in result.error.details["reason"]
        upgraded.approve_plugin("files")
        assert (await upgraded.call("write_file")).ok

    # Same version, but the plugin now declares another tool: void as well.
    async with Runtime(meith_home, load_plugins=False) as grown:
        grown.load_plugin("files", plugin_class(_writer(counter), _reader()), version="1.1")
        result = await grown.call("write_file")
        assert result.error.code is ErrorCode.PERMISSION_DENIED
        assert "void" in result.error.details["reason"]
    assert counter.runs == 3


@pytest.mark.anyio
async def test_a_void_approval_also_voids_the_plugin_as_a_caller(
    meith_home: Any, counter: Counter
) -> None:
    async with Runtime(meith_home, load_plugins=False) as first:
        first.register(_writer(counter))  # an app tool: no provider gate
        first.load_plugin("relayer", plugin_class(_relay()), version="1")
        first.permissions.plugin_approvals.approve(
            "relayer", ["read-only", "writes-files"], first.plugins.fingerprint_of("relayer") or ""
        )
        assert (await first.call("relay", {"text": "write_file"})).content["ok"] is True
    async with Runtime(meith_home, load_plugins=False) as second:
        second.register(_writer(counter))
        second.load_plugin("relayer", plugin_class(_relay()), version="2")
        inner = (await second.call("relay", {"text": "write_file"})).content
        assert inner["error"]["code"] == "PERMISSION_DENIED"
        assert "void" in inner["error"]["details"]["reason"]
    assert counter.runs == 1


@pytest.mark.anyio
async def test_an_approval_missing_a_capability_the_plugin_declares_is_not_enough(
    runtime: Runtime, counter: Counter
) -> None:
    async def wipe(ctx: ToolContext, args: NoArgs) -> str:
        counter.runs += 1
        return "wiped"

    runtime.load_plugin("mixed", plugin_class(make_tool(wipe, "writes-files", "destructive")))
    runtime.approve_plugin("mixed", ["writes-files"])
    result = await runtime.call("wipe")
    assert result.error.code is ErrorCode.PERMISSION_DENIED
    assert result.error.details["missing"] == ["destructive"]
    assert counter.runs == 0


# -- every decision has a reason ---------------------------------------------------------


@pytest.mark.anyio
async def test_every_audited_decision_carries_a_reason(files: Runtime) -> None:
    cli = files.open_session("cli")
    agent = files.open_session("agent")
    files.grant(agent, ["writes-files"], uses=1)
    calls: list[tuple[str, dict[str, Any], Any]] = [
        ("read_file", {}, cli),
        ("write_file", {}, cli),
        ("write_file", {}, agent),
        ("write_file", {}, agent),
        ("write_file", {}, CallerKind.INTERNAL),
        ("write_file", {"x": 1}, CallerKind.INTERNAL),
        ("nope", {}, cli),
        ("write_file", {}, CallerInfo(CallerKind.AGENT)),
    ]
    for name, args, caller in calls:
        await files.call(name, args, caller=caller)
    files.pipeline.begin_shutdown()
    await files.call("write_file", caller=cli)
    # Outcome records (intent records of privileged calls carry a reason too).
    everything = list(files.audit.read())
    records = [r for r in everything if "kind" not in r]
    assert len(records) == len(calls) + 1
    for record in everything:
        assert isinstance(record["reason"], str)
        assert record["reason"].strip()
    assert [r["decision"] for r in records] == [
        "allow",
        "deny",
        "allow",
        "deny",
        "allow",
        "allow",
        "allow",
        "deny",
        "allow",
    ]


@pytest.mark.anyio
async def test_tools_without_a_privileged_capability_are_allowed_for_every_caller(
    runtime: Runtime,
) -> None:
    async def fetch(ctx: ToolContext, args: NoArgs) -> str:
        """Reads something over the network."""
        return "fetched"

    # From a plugin nobody approved, declaring accesses-network: not privileged.
    runtime.load_plugin("net", plugin_class(make_tool(fetch, "accesses-network")))
    runtime.load_plugin("ghost", plugin_class(_relay()))
    callers: list[Any] = [
        runtime.open_session("cli"),
        runtime.open_session("agent"),
        CallerInfo(CallerKind.AGENT),  # even without a session
        CallerInfo(CallerKind.PLUGIN, session_id="socket:x"),  # an unbound plugin claim
        CallerKind.RENDERER,
        CallerKind.INTERNAL,
    ]
    for caller in callers:
        result = await runtime.call("fetch", caller=caller)
        assert result.content == "fetched", caller
    assert (await runtime.call("relay", {"text": "fetch"})).content["ok"] is True
    records = [r for r in runtime.audit.read() if r["toolName"] == "fetch"]
    assert len(records) == len(callers) + 1
    assert {r["reason"] for r in records} == {"no privileged capability"}
    assert {r["decision"] for r in records} == {"allow"}


@pytest.mark.anyio
async def test_the_memory_of_revoked_sessions_is_bounded(
    files: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    import meith_core.policy.session_grants as session_grants

    monkeypatch.setattr(session_grants, "MAX_REMEMBERED_REVOKED", 3)
    sessions = [files.open_session("cli") for _ in range(5)]
    for session in sessions:
        files.permissions.revoke_session(session.session_id or "")
    assert [files.permissions.is_revoked(s.session_id) for s in sessions] == [
        False,
        False,
        True,
        True,
        True,
    ]
    # A forgotten session is still a session without grants.
    result = await files.call("write_file", caller=sessions[0])
    assert result.error.code is ErrorCode.PERMISSION_DENIED
