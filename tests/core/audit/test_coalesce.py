"""Nobody without a grant can push evidence out of the audit trail: floods of refused or failed
calls from one session are coalesced, privileged calls that ran are never coalesced, and
successful unprivileged calls beyond a rate are counted into summaries."""

from __future__ import annotations

from typing import Any

import pytest

from meith_core import ErrorCode, Runtime, ToolContext
from meith_core.audit.coalesce import BURST, BURST_ALL_SESSIONS, Coalescer
from meith_core.audit.log import AuditLog
from tests.core.support import NoArgs, TextArgs, make_tool

FLOOD = 41_000  # what emptied the trail of every earlier record before


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_flood_of_unknown_tool_calls_keeps_every_earlier_record(runtime: Runtime) -> None:
    async def write(ctx: ToolContext, args: NoArgs) -> str:
        return "written"

    runtime.register(make_tool(write, "writes-files"))
    assert (await runtime.call("write", request_id="req_evidence")).ok
    attacker = runtime.open_session("agent")  # no grant at all
    for i in range(FLOOD):
        await runtime.call(f"no_such_tool_{i}", caller=attacker)
    runtime.audit.close()  # closes the open coalescing window

    records = list(runtime.audit.read())
    evidence = [r for r in records if r.get("requestId") == "req_evidence"]
    assert [r.get("kind", "outcome") for r in evidence] == ["intent", "outcome"]
    flood = [r for r in records if r.get("sessionId") == attacker.session_id]
    # A burst of calls in full per coalescing window, then one record counting the rest: every
    # call is accounted for, in a few records (how many windows the flood spans depends on how
    # fast this machine ran it, so that number is not asserted).
    full = [r for r in flood if r.get("kind") is None]
    summaries = [r for r in flood if r.get("kind") == "coalesced"]
    assert len(full) + sum(s["count"] for s in summaries) == FLOOD
    assert len(flood) < FLOOD // 100
    assert [r["toolName"] for r in full[:BURST]] == [f"no_such_tool_{i}" for i in range(BURST)]
    assert {r["outcome"] for r in full} == {"UNKNOWN_TOOL"}
    first = summaries[0]
    assert first["toolName"] == "*unknown*"
    assert first["toolNames"][:2] == [f"no_such_tool_{BURST}", f"no_such_tool_{BURST + 1}"]
    assert f"{first['count']} more similar calls refused" in first["reason"]


@pytest.mark.anyio
async def test_denied_privileged_calls_are_coalesced_per_session_and_tool(
    runtime: Runtime,
) -> None:
    async def write(ctx: ToolContext, args: NoArgs) -> str:
        return "written"

    async def other(ctx: ToolContext, args: NoArgs) -> str:
        return "other"

    runtime.register([make_tool(write, "writes-files"), make_tool(other, "writes-files")])
    a, b = runtime.open_session("agent"), runtime.open_session("agent")
    for _ in range(BURST + 4):
        for session in (a, b):
            assert (await runtime.call("write", caller=session)).error.code is (
                ErrorCode.PERMISSION_DENIED
            )
    await runtime.call("other", caller=a)
    runtime.audit.close()
    records = list(runtime.audit.read())
    for session in (a, b):
        mine = [r for r in records if r["sessionId"] == session.session_id]
        writes = [r for r in mine if r["toolName"] == "write"]
        assert [r.get("kind") for r in writes] == [None] * BURST + ["coalesced"]
        assert writes[-1]["count"] == 4
        assert writes[-1]["decision"] == "deny"
    # Another tool is another kind: written in full.
    [other_record] = [r for r in records if r["toolName"] == "other"]
    assert other_record["decision"] == "deny"


@pytest.mark.anyio
async def test_privileged_calls_that_ran_are_never_coalesced_even_when_they_fail(
    runtime: Runtime,
) -> None:
    async def fail(ctx: ToolContext, args: TextArgs) -> str:
        raise RuntimeError("disk full")

    runtime.register(make_tool(fail, "writes-files", input=TextArgs))
    for i in range(20):
        result = await runtime.call("fail", {"text": str(i)}, request_id=f"req_{i}")
        assert result.error.code is ErrorCode.TOOL_FAILED
    runtime.audit.close()
    records = list(runtime.audit.read())
    outcomes = [r for r in records if "kind" not in r]
    assert [r["requestId"] for r in outcomes] == [f"req_{i}" for i in range(20)]
    assert not [r for r in records if r.get("kind") == "coalesced"]


@pytest.mark.anyio
async def test_read_only_failures_and_validation_errors_are_coalesced_too(
    runtime: Runtime,
) -> None:
    async def broken(ctx: ToolContext, args: TextArgs) -> str:
        raise RuntimeError("nope")

    runtime.register(make_tool(broken, input=TextArgs))
    session = runtime.open_session("cli")
    for _ in range(BURST + 9):
        await runtime.call("broken", {"text": "x"}, caller=session)
        await runtime.call("broken", {"text": 1}, caller=session)
    runtime.audit.close()
    records = [r for r in runtime.audit.read() if r["sessionId"] == session.session_id]
    kinds = [(r["outcome"], r.get("kind"), r.get("count")) for r in records]
    assert kinds == [
        *[("TOOL_FAILED", None, None), ("VALIDATION_ERROR", None, None)] * BURST,
        ("TOOL_FAILED", "coalesced", 9),
        ("VALIDATION_ERROR", "coalesced", 9),
    ]


def _failure(session: str, request: str, ts: int = 1) -> dict[str, Any]:
    return {
        "ts": ts,
        "requestId": request,
        "caller": "agent",
        "sessionId": session,
        "toolName": "x",
        "plugin": None,
        "capabilities": [],
        "decision": "allow",
        "outcome": "UNKNOWN_TOOL",
    }


def test_a_window_closes_with_the_next_record_after_it(tmp_path: Any) -> None:
    now = [0.0]
    log = AuditLog(
        tmp_path / "audit.jsonl", coalesce_window_s=10, coalesce_burst=1, clock=lambda: now[0]
    )
    for i in range(5):
        assert log.write(_failure("s1", f"r{i}", ts=i))
    assert [r["requestId"] for r in log.read()] == ["r0"]  # four counted, not yet written
    now[0] = 11.0
    log.write({"id": "ok", "outcome": "ok"})  # any later record closes the window first
    records = list(log.read())
    assert [r.get("kind") for r in records] == [None, "coalesced", None]
    assert records[1]["count"] == 4
    assert (records[1]["firstTs"], records[1]["lastTs"]) == (1, 4)
    assert records[1]["requestIds"] == ["r1", "r2", "r3", "r4"]
    # A new flood after the window starts over with a full record.
    log.write(_failure("s1", "r9"))
    assert [r.get("requestId") for r in log.read()][-1] == "r9"
    log.close()


def test_open_windows_are_bounded_and_an_evicted_one_is_still_counted() -> None:
    from meith_core.audit import coalesce

    c = Coalescer(burst=1, burst_all_sessions=10**9)  # only the per-session windows count
    sessions = coalesce.MAX_WINDOWS - 1  # and one window spans them all
    for s in range(sessions):
        assert not c.absorb(_failure(f"s{s}", "first"), 0.0)
        assert c.absorb(_failure(f"s{s}", "again"), 0.0)
    assert not c.absorb(_failure("one more", "first"), 0.0)  # evicts the oldest window
    [evicted] = c.due(0.0)
    assert (evicted["sessionId"], evicted["count"]) == ("s0", 1)
    assert len(c.drain()) == sessions - 1


@pytest.mark.anyio
async def test_a_new_session_for_every_call_is_coalesced_across_sessions(
    runtime: Runtime,
) -> None:
    n = BURST_ALL_SESSIONS + 500
    for i in range(n):
        await runtime.call(f"no_such_tool_{i}", caller=runtime.open_session("agent"))
    runtime.audit.close()
    records = [r for r in runtime.audit.read() if r["caller"] == "agent"]
    full = [r for r in records if r.get("kind") is None]
    wide = [r for r in records if r.get("kind") == "coalesced"]
    assert len(full) + sum(r["count"] for r in wide) == n  # every call accounted for
    # A burst in full per window (how many windows the run spans depends on the machine).
    assert wide
    assert len(full) <= BURST_ALL_SESSIONS * (len(wide) + 1)
    assert {r["sessionId"] for r in wide} == {"*"}
    assert len(wide[0]["sessionIds"]) == 5
    assert "from many agent sessions" in wide[0]["reason"]


def test_a_flood_of_successful_unprivileged_calls_is_summarised() -> None:
    c = Coalescer(window_s=10.0, ok_burst=5)

    def ok_call(i: int, tool: str = "get_active_tab", caps: tuple[str, ...] = ("read-only",)):
        return {
            "requestId": f"r{i}",
            "ts": 1000 + i,
            "caller": "agent",
            "sessionId": "s1",
            "toolName": tool,
            "plugin": "browser",
            "capabilities": list(caps),
            "decision": "allow",
            "outcome": "ok",
        }

    absorbed = [c.absorb(ok_call(i), now=1.0) for i in range(50)]
    assert absorbed.count(False) == 5  # written in full
    # Another successful tool has a window of its own; a privileged one is never coalesced.
    assert not c.absorb(ok_call(99, "git_status"), now=1.0)
    assert not any(
        c.absorb(ok_call(100 + i, "start_dev_server", ("starts-process",)), now=1.0)
        for i in range(50)
    )
    (summary,) = c.due(now=20.0)
    assert summary["kind"] == "coalesced"
    assert summary["count"] == 45
    assert summary["toolName"] == "get_active_tab"
    assert "succeeded" in summary["reason"]
