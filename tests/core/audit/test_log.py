"""`$MEITH_HOME/audit.jsonl`: one valid line per call for every outcome, private files, and no
privileged call without an audit record."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

import anyio
import pytest
import structlog.testing

from meith_core import (
    CallerInfo,
    CallerKind,
    CancelToken,
    ErrorCode,
    MeithHome,
    Runtime,
    ToolContext,
)
from meith_core.audit import log as audit_log_module
from meith_core.audit.log import AuditLog
from tests.core.support import NoArgs, TextArgs, audit_lines, make_tool, records_for

FIELDS = {
    "id",
    "ts",
    "requestId",
    "caller",
    "sessionId",
    "toolName",
    "capabilities",
    "decision",
    "reason",
    "cwd",
    "spaceId",
    "tabId",
    "argsSummary",
    "resultSummary",
    "durationMs",
}


def entry(i: int) -> dict[str, Any]:
    return {"id": f"audit_{i:012x}", "seq": i}


# -- files ------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_audit_file_is_0600_in_a_0700_directory(runtime: Runtime) -> None:
    async def noop(ctx: ToolContext, args: NoArgs) -> None:
        pass

    runtime.register(make_tool(noop))
    await runtime.call("noop")
    path = runtime.home.audit_path
    assert path.parent == runtime.home.root
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_an_existing_audit_file_that_is_too_open_is_tightened(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_text("")
    path.chmod(0o644)
    log = AuditLog(path)
    assert log.write(entry(1))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    log.close()


def test_the_home_directory_is_made_private(tmp_path: Path) -> None:
    root = tmp_path / "home"
    root.mkdir(mode=0o755)
    root.chmod(0o755)
    MeithHome(root).ensure()
    assert stat.S_IMODE(root.stat().st_mode) == 0o700


# -- one record per call, every outcome -------------------------------------------------


@pytest.fixture
def outcomes(runtime: Runtime) -> Runtime:
    async def ok(ctx: ToolContext, args: TextArgs) -> str:
        return "fine"

    async def boom(ctx: ToolContext, args: NoArgs) -> None:
        raise RuntimeError("boom")

    async def slow(ctx: ToolContext, args: NoArgs) -> None:
        await anyio.sleep(3600)

    async def write(ctx: ToolContext, args: NoArgs) -> str:
        return "written"

    runtime.register(
        [
            make_tool(ok, input=TextArgs),
            make_tool(boom),
            make_tool(slow, timeout_ms=20),
            make_tool(write, "writes-files"),
        ]
    )
    return runtime


@pytest.mark.anyio
async def test_every_call_writes_exactly_one_record_whatever_its_outcome(
    outcomes: Runtime,
) -> None:
    cli = outcomes.open_session("cli")
    cancelled = CancelToken()
    cancelled.cancel()
    cases: list[tuple[str, str, Any, dict[str, Any]]] = [
        ("req_ok", "ok", {"text": "hi"}, {}),
        ("req_unknown", "no_such_tool", {}, {}),
        ("req_invalid", "ok", {"text": 5, "extra": 1}, {}),
        ("req_not_object", "ok", [1, 2], {}),
        ("req_denied", "write", {}, {"caller": cli}),
        ("req_failed", "boom", {}, {}),
        ("req_timeout", "slow", {}, {}),
        ("req_cancelled", "slow", {}, {"cancel": cancelled}),
    ]
    for request_id, name, args, kwargs in cases:
        await outcomes.call(name, args, request_id=request_id, **kwargs)
    outcomes.pipeline.begin_shutdown()
    await outcomes.call("ok", {"text": "x"}, request_id="req_shutdown")

    expected = {
        "req_ok": ("ok", "allow"),
        "req_unknown": ("UNKNOWN_TOOL", "allow"),
        "req_invalid": ("VALIDATION_ERROR", "allow"),
        "req_not_object": ("VALIDATION_ERROR", "allow"),
        "req_denied": ("PERMISSION_DENIED", "deny"),
        "req_failed": ("TOOL_FAILED", "allow"),
        "req_timeout": ("TIMEOUT", "allow"),
        "req_cancelled": ("CANCELLED", "allow"),
        "req_shutdown": ("RUNTIME_SHUTTING_DOWN", "allow"),
    }
    lines = audit_lines(outcomes.audit.path)
    assert len(lines) == len(expected)
    for request_id, (outcome, decision) in expected.items():
        [record] = records_for(outcomes.audit.path, request_id)
        assert record["outcome"] == outcome
        assert record["decision"] == decision
        assert set(record) >= FIELDS, FIELDS - set(record)
        assert re.fullmatch(r"audit_[0-9a-f]{12}", record["id"])
        assert isinstance(record["ts"], int)
        assert record["durationMs"] >= 0
        assert record["reason"]


@pytest.mark.anyio
async def test_a_record_describes_the_call(outcomes: Runtime, tmp_path: Path) -> None:
    caller = CallerInfo(
        CallerKind.CLI,
        session_id="socket:abc",
        cwd=str(tmp_path),
        space_id="space_1",
        tab_id="btab_2",
        claimed_caller="renderer",
    )
    await outcomes.call("ok", {"text": "hello"}, caller=caller, request_id="req_describe")
    [record] = records_for(outcomes.audit.path, "req_describe")
    assert record["caller"] == "cli"
    assert record["claimedCaller"] == "renderer"  # what the peer claimed, downgraded
    assert record["sessionId"] == "socket:abc"
    assert record["toolName"] == "ok"
    assert record["plugin"] == "app"
    assert record["capabilities"] == ["read-only"]
    assert record["cwd"] == str(tmp_path)
    assert (record["spaceId"], record["tabId"]) == ("space_1", "btab_2")
    assert record["argsSummary"] == '{"text":"[REDACTED_TEXT 5 chars]"}'
    assert record["resultSummary"] == '{"ok":true,"content":"[REDACTED_TEXT 4 chars]"}'


@pytest.mark.anyio
async def test_each_record_is_one_os_write(
    outcomes: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A spy on os.write in the audit module (the only way to count system calls here).
    writes: list[bytes] = []
    real_write = os.write

    def spy(fd: int, data: Any) -> int:
        writes.append(bytes(data))
        return real_write(fd, data)

    monkeypatch.setattr(audit_log_module.os, "write", spy)
    for i in range(5):
        await outcomes.call("ok", {"text": str(i)})
    monkeypatch.undo()
    assert len(writes) == 5
    assert all(w.endswith(b"\n") and w.count(b"\n") == 1 for w in writes)


def test_a_short_write_is_detected_and_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A regular file never short-writes here, so the kernel's answer is simulated.
    log = AuditLog(tmp_path / "audit.jsonl")
    assert log.write(entry(1))
    monkeypatch.setattr(audit_log_module.os, "write", lambda fd, data: len(data) // 2)
    assert not log.write(entry(2))
    assert "short write" in (log.last_error or "")
    monkeypatch.undo()
    assert log.write(entry(3))
    assert log.last_error is None
    log.close()


# -- hostile input through the whole pipeline -----------------------------------------------


def _deep_dict(n: int) -> Any:
    value: Any = "bottom"
    for _ in range(n):
        value = {"k": value}
    return value


def _cyclic() -> Any:
    a: dict[str, Any] = {}
    a["a"] = a
    return a


@pytest.mark.anyio
async def test_hostile_arguments_and_results_never_break_the_audit_trail(
    runtime: Runtime,
) -> None:
    returns: dict[str, Any] = {}

    async def echo_back(ctx: ToolContext, args: NoArgs) -> Any:
        return returns["value"]

    runtime.register(make_tool(echo_back))
    hostile_args: list[Any] = [
        _deep_dict(10_000),
        {"bad\udcff": "\ud800", "nul\x00": "a\x00b"},
        {"cyclic": _cyclic()},
        {"n": float("nan")},
        {"x" * 100_000: "y" * 1_000_000},
    ]
    # One session per call: repeated failures of one session would be coalesced.
    for args in hostile_args:
        result = await runtime.call("echo_back", args, caller=runtime.open_session("cli"))
        assert result.error.code is ErrorCode.VALIDATION_ERROR
    hostile_results: list[Any] = [
        _deep_dict(10_000),
        _cyclic(),
        {"path": "bad\udcffname", "nul": "a\x00b"},
        [b"bytes"],
        "z" * 3_000_000,
    ]
    for value in hostile_results:
        returns["value"] = value
        await runtime.call("echo_back", caller=runtime.open_session("cli"))
    lines = audit_lines(runtime.audit.path)  # every line parses, is UTF-8, is an object
    assert len(lines) == len(hostile_args) + len(hostile_results)
    for record in lines:
        assert len(record["argsSummary"]) <= 2000 + len("...[truncated]")
        assert len(record["resultSummary"]) <= 2000 + len("...[truncated]")


# -- reading ----------------------------------------------------------------------------


def test_the_reader_skips_lines_it_cannot_parse(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_bytes(b'{"seq":1}\nnot json\n[1,2]\n\xff\xfe\n{"seq":2}\n{"seq":')
    assert [r["seq"] for r in AuditLog(path).read()] == [1, 2]


# -- when the record cannot be written ---------------------------------------------------------


def _break_audit_path(home: MeithHome, how: str, tmp_path: Path) -> Path | None:
    path = home.audit_path
    if how == "directory":
        path.mkdir()
        return None
    if how == "dangling_symlink":
        path.symlink_to(tmp_path / "nowhere" / "audit.jsonl")
        return None
    target = tmp_path / "planted.jsonl"  # a symlink to a real file: must not be followed
    target.write_text("")
    path.symlink_to(target)
    return target


@pytest.mark.anyio
@pytest.mark.parametrize("how", ["directory", "dangling_symlink", "symlink_to_a_file"])
async def test_a_privileged_call_is_denied_when_its_record_cannot_be_written(
    runtime: Runtime, tmp_path: Path, how: str
) -> None:
    ran: list[str] = []

    async def write(ctx: ToolContext, args: NoArgs) -> str:
        ran.append("write")
        return "written"

    async def read(ctx: ToolContext, args: NoArgs) -> str:
        ran.append("read")
        return "read"

    runtime.register([make_tool(write, "writes-files"), make_tool(read)])
    planted = _break_audit_path(runtime.home, how, tmp_path)
    with structlog.testing.capture_logs() as logs:
        denied = await runtime.call("write")  # internal: trusted, but never unaudited
        allowed = await runtime.call("read")
    assert denied.error.code is ErrorCode.PERMISSION_DENIED
    assert "audit trail unavailable" in denied.error.message
    assert allowed.ok  # read-only calls proceed...
    assert ran == ["read"]
    errors = [e for e in logs if e["event"] == "audit record not written"]
    assert len(errors) == 2  # ...with the failure logged (for both records)
    assert errors[0]["log_level"] == "error"
    assert runtime.audit.status()["ok"] is False
    if planted is not None:
        assert planted.read_text() == ""  # the symlink was not followed


@pytest.mark.anyio
async def test_the_trail_recovers_once_the_path_is_usable_again(
    runtime: Runtime, tmp_path: Path
) -> None:
    async def write(ctx: ToolContext, args: NoArgs) -> str:
        return "written"

    runtime.register(make_tool(write, "writes-files"))
    runtime.home.audit_path.mkdir()
    assert (await runtime.call("write")).error.code is ErrorCode.PERMISSION_DENIED
    runtime.home.audit_path.rmdir()
    assert (await runtime.call("write")).ok
    # The intent record written before it ran, then its outcome.
    assert [r["outcome"] for r in audit_lines(runtime.home.audit_path)] == ["started", "ok"]
