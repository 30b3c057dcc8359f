"""The call pipeline, in order: shutdown, lookup, validation, permission,
run, normalise, audit. `call()` resolves to a ToolResult and never raises."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import pytest
import structlog.testing
from pydantic import BaseModel, ConfigDict, Field

from meith_core import (
    CallerInfo,
    CallerKind,
    ErrorCode,
    Runtime,
    ToolContext,
    ToolError,
    error_result,
    ok_result,
)
from meith_core.call.pipeline import MAX_NESTED_CALLS
from meith_core.protocol import dumps_bytes
from tests.core.support import NoArgs, TextArgs, make_tool, plugin_class, records_for


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    count: int = Field(ge=0)
    label: str
    tags: list[str] = []


def counter() -> tuple[dict[str, int], Any]:
    ran = {"n": 0}

    async def counted(ctx: ToolContext, args: Strict) -> dict[str, Any]:
        ran["n"] += 1
        return {"count": args.count, "label": args.label}

    return ran, counted


# -- 1. shutdown, first -----------------------------------------------------------------


@pytest.mark.anyio
async def test_after_begin_shutdown_every_call_is_runtime_shutting_down(runtime: Runtime) -> None:
    ran, counted = counter()
    runtime.register(make_tool(counted, input=Strict))
    runtime.pipeline.begin_shutdown()
    for name, args in [
        ("counted", {"count": 1, "label": "x"}),
        ("anything", {}),
        ("counted", {"bogus": True}),
        ("counted", [1, 2]),
    ]:
        result = await runtime.call(name, args)  # type: ignore[arg-type]
        assert result.error is not None
        assert result.error.code is ErrorCode.RUNTIME_SHUTTING_DOWN
        assert result.error.message == "Runtime is shutting down"
    assert ran["n"] == 0


# -- 2. unknown tool --------------------------------------------------------------------


@pytest.mark.anyio
async def test_an_unknown_tool_is_a_result_not_an_exception(runtime: Runtime) -> None:
    result = await runtime.call("does_not_exist", {"whatever": [1]})
    assert not result.ok
    assert result.error.code is ErrorCode.UNKNOWN_TOOL
    assert result.error.message == "Unknown tool: does_not_exist"


# -- 3. validation ----------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("args", "where"),
    [
        ({}, "count"),
        ({"count": "many", "label": "x"}, "count"),
        ({"count": -1, "label": "x"}, "count"),
        ({"count": 1, "label": "x", "extra": 1}, "extra"),
        ({"count": 1, "label": "x", "tags": "notalist"}, "tags"),
        ({"count": 1, "label": "x", "tags": [1]}, "tags.0"),
    ],
)
async def test_invalid_arguments_are_a_validation_error_and_the_tool_does_not_run(
    runtime: Runtime, args: dict[str, Any], where: str
) -> None:
    ran, counted = counter()
    runtime.register(make_tool(counted, input=Strict))
    result = await runtime.call("counted", args)
    assert result.error.code is ErrorCode.VALIDATION_ERROR
    assert result.error.message.startswith('Invalid arguments for "counted"')
    paths = [".".join(map(str, e["path"])) for e in result.error.details["errors"]]
    assert where in paths
    assert ran["n"] == 0


class ActsOnATerminal(BaseModel):
    model_config = ConfigDict(extra="forbid")
    terminalId: str
    data: str = ""


@pytest.mark.anyio
async def test_an_id_passed_as_id_is_told_the_argument_name(runtime: Runtime) -> None:
    """A result says `id`; the tools acting on it say `terminalId`: the one line says which."""
    ran, counted = counter()
    runtime.register(make_tool(counted, input=ActsOnATerminal))
    result = await runtime.call("counted", {"id": "term_1", "data": "x"})
    assert result.error.code is ErrorCode.VALIDATION_ERROR
    assert result.error.message == (
        'Invalid arguments for "counted": unknown argument "id": this tool takes the id as '
        '"terminalId"'
    )
    assert ran["n"] == 0
    # With the id given as well, `id` is an unknown argument like any other.
    other = await runtime.call("counted", {"id": "term_1", "terminalId": "term_1"})
    assert other.error.message == (
        'Invalid arguments for "counted": unknown argument "id". It takes: terminalId, data.'
    )


@pytest.mark.anyio
@pytest.mark.parametrize("args", [[1, 2], "text", 42, True])
async def test_arguments_that_are_not_an_object_are_a_validation_error(
    runtime: Runtime, args: Any
) -> None:
    ran, counted = counter()
    runtime.register(make_tool(counted, input=Strict))
    result = await runtime.pipeline.call(CallerInfo(CallerKind.INTERNAL), "counted", args)
    assert result.error.code is ErrorCode.VALIDATION_ERROR
    assert ran["n"] == 0


@pytest.mark.anyio
async def test_validation_details_are_json_safe_and_never_echo_the_input(
    runtime: Runtime,
) -> None:
    _, counted = counter()
    runtime.register(make_tool(counted, input=Strict))
    secret = "s3cr3t-" + "x" * 5000
    hostile = {
        "count": secret,
        "label": {"nested": object()},
        "\ud800bad": b"bytes",
        **{f"k{i}": i for i in range(100)},
    }
    result = await runtime.call("counted", hostile)
    assert result.error.code is ErrorCode.VALIDATION_ERROR
    details = result.error.details
    wire = dumps_bytes(details)  # JSON, no NaN, no objects
    json.loads(wire)
    assert b"s3cr3t" not in wire
    assert len(details["errors"]) <= 50
    assert set(details["errors"][0]) == {"path", "message", "type"}
    assert dumps_bytes(result.to_wire())


@pytest.mark.anyio
async def test_validation_comes_before_permission(runtime: Runtime) -> None:
    ran, counted = counter()
    runtime.load_plugin("wp", plugin_class(make_tool(counted, "writes-files", input=Strict)))
    cli = runtime.open_session("cli")
    bad = await runtime.call("counted", {"count": "x"}, caller=cli)
    assert bad.error.code is ErrorCode.VALIDATION_ERROR
    good = await runtime.call("counted", {"count": 1, "label": "x"}, caller=cli)
    assert good.error.code is ErrorCode.PERMISSION_DENIED
    assert ran["n"] == 0


# -- 4. permission ----------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_denied_call_does_not_run_and_says_why(runtime: Runtime) -> None:
    ran, counted = counter()
    runtime.register(make_tool(counted, "writes-files", input=Strict))
    result = await runtime.call("counted", {"count": 1, "label": "x"}, caller="cli")
    assert result.error.code is ErrorCode.PERMISSION_DENIED
    assert "writes-files" in result.error.message
    assert result.error.details["reason"]
    assert ran["n"] == 0


# -- 6. normalisation -------------------------------------------------------------------


class Point(BaseModel):
    x: int
    y: int


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("value", "wire"),
    [
        ({"a": [1, "b", None]}, {"ok": True, "content": {"a": [1, "b", None]}}),
        ("text", {"ok": True, "content": "text"}),
        (0, {"ok": True, "content": 0}),
        (False, {"ok": True, "content": False}),
        (None, {"ok": True}),
        ([], {"ok": True, "content": []}),
        (Point(x=1, y=2), {"ok": True, "content": {"x": 1, "y": 2}}),
        (
            ok_result({"n": 1}, meta={"m": 1}, diagnostics=[{"level": "warn", "message": "w"}]),
            {
                "ok": True,
                "content": {"n": 1},
                "meta": {"m": 1},
                "diagnostics": [{"level": "warn", "message": "w"}],
            },
        ),
        (
            error_result("VALIDATION_ERROR", "bad path", {"path": "x"}),
            {
                "ok": False,
                "error": {
                    "code": "VALIDATION_ERROR",
                    "message": "bad path",
                    "details": {"path": "x"},
                },
            },
        ),
    ],
)
async def test_raw_values_are_wrapped_and_tool_results_pass_through(
    runtime: Runtime, value: Any, wire: dict[str, Any]
) -> None:
    async def returns(ctx: ToolContext, args: NoArgs) -> Any:
        return value

    runtime.register(make_tool(returns))
    assert (await runtime.call("returns")).to_wire() == wire


@pytest.mark.anyio
@pytest.mark.parametrize("sync", [True, False])
async def test_a_tool_error_keeps_its_code_message_and_details(
    runtime: Runtime, sync: bool
) -> None:
    def fail_sync(ctx: ToolContext, args: NoArgs) -> None:
        raise ToolError(ErrorCode.PERMISSION_DENIED, "outside the repo", {"path": "/etc"})

    async def fail_async(ctx: ToolContext, args: NoArgs) -> None:
        fail_sync(ctx, args)

    runtime.register(make_tool(fail_sync if sync else fail_async, name="fails"))
    result = await runtime.call("fails")
    assert result.to_wire()["error"] == {
        "code": "PERMISSION_DENIED",
        "message": "outside the repo",
        "details": {"path": "/etc"},
    }


@pytest.mark.anyio
async def test_tool_error_details_that_are_not_json_are_made_safe(runtime: Runtime) -> None:
    async def fails(ctx: ToolContext, args: NoArgs) -> None:
        raise ToolError(ErrorCode.TOOL_FAILED, "boom", {"obj": object(), "n": float("nan")})

    runtime.register(make_tool(fails))
    result = await runtime.call("fails")
    assert result.error.code is ErrorCode.TOOL_FAILED
    assert isinstance(result.error.details, str)
    dumps_bytes(result.to_wire())


def _recurse(n: int) -> int:
    return _recurse(n + 1) + 1


_RAISERS: dict[str, Any] = {
    "value_error": lambda: (_ for _ in ()).throw(ValueError("bad value")),
    "system_exit": lambda: sys.exit(3),
    "keyboard_interrupt": lambda: (_ for _ in ()).throw(KeyboardInterrupt()),
    "recursion_error": lambda: _recurse(0),
    "generator_exit": lambda: (_ for _ in ()).throw(GeneratorExit()),
    "base_exception": lambda: (_ for _ in ()).throw(BaseException("base")),
}


@pytest.mark.anyio
@pytest.mark.parametrize("kind", sorted(_RAISERS))
@pytest.mark.parametrize("sync", [True, False], ids=["sync", "async"])
async def test_anything_a_tool_raises_is_tool_failed_and_the_host_keeps_working(
    runtime: Runtime, kind: str, sync: bool
) -> None:
    raiser = _RAISERS[kind]

    def bad_sync(ctx: ToolContext, args: NoArgs) -> None:
        raiser()

    async def bad_async(ctx: ToolContext, args: NoArgs) -> None:
        raiser()

    async def fine(ctx: ToolContext, args: NoArgs) -> str:
        return "still here"

    runtime.register([make_tool(bad_sync if sync else bad_async, name="bad"), make_tool(fine)])
    # (Captured: the test session's console renderer would spend seconds pretty-printing a
    # thousand-frame RecursionError traceback.)
    with structlog.testing.capture_logs() as logs:
        result = await runtime.call("bad")
        assert not result.ok
        assert result.error.code is ErrorCode.TOOL_FAILED
        assert result.error.message
        assert "Traceback" not in result.error.message  # the traceback goes to the log only
        assert any(entry.get("exc_info") for entry in logs)
        assert (await runtime.call("fine")).content == "still here"
        assert (await runtime.call("bad")).error.code is ErrorCode.TOOL_FAILED


@pytest.mark.anyio
async def test_a_tool_that_raises_cancelled_error_by_itself_is_tool_failed(
    runtime: Runtime,
) -> None:
    async def self_cancel(ctx: ToolContext, args: NoArgs) -> None:
        raise asyncio.CancelledError

    runtime.register(make_tool(self_cancel))
    result = await runtime.call("self_cancel")
    assert result.error.code is ErrorCode.TOOL_FAILED


def _cyclic() -> Any:
    a: dict[str, Any] = {"a": 1}
    a["self"] = a
    return a


def _deep(n: int) -> Any:
    value: Any = 1
    for _ in range(n):
        value = [value]
    return value


_NOT_JSON: dict[str, Any] = {
    "set": lambda: {1, 2},
    "object": object,
    "nan": lambda: float("nan"),
    "inf_in_list": lambda: [1, float("inf")],
    "bytes": lambda: b"raw",
    "cyclic": _cyclic,
    "deep_10000": lambda: _deep(10_000),
    "tuple_key": lambda: {(1, 2): "x"},
    "result_with_bad_content": lambda: ok_result({"x": object()}),
}


@pytest.mark.anyio
@pytest.mark.parametrize("kind", sorted(_NOT_JSON))
@pytest.mark.parametrize("sync", [True, False], ids=["sync", "async"])
async def test_a_result_that_is_not_json_is_tool_failed(
    runtime: Runtime, kind: str, sync: bool
) -> None:
    make = _NOT_JSON[kind]

    def bad_sync(ctx: ToolContext, args: NoArgs) -> Any:
        return make()

    async def bad_async(ctx: ToolContext, args: NoArgs) -> Any:
        return make()

    runtime.register(make_tool(bad_sync if sync else bad_async, name="bad"))
    result = await runtime.call("bad")
    assert result.error.code is ErrorCode.TOOL_FAILED
    assert "not JSON" in result.error.message
    dumps_bytes(result.to_wire())
    # ...and the audit line for it is valid.
    assert records_for(runtime.audit.path, _last_request(runtime))[0]["outcome"] == "TOOL_FAILED"


def _last_request(runtime: Runtime) -> str:
    records = list(runtime.audit.read())
    return str(records[-1]["requestId"])


@pytest.mark.anyio
async def test_call_never_raises_even_when_the_permission_service_fails(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A mock, on purpose: no real input makes the permission service raise; this proves the
    # registry's last line of defence.
    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("permission store exploded")

    async def priv(ctx: ToolContext, args: NoArgs) -> str:
        return "ran"

    runtime.register(make_tool(priv, "writes-files"))
    monkeypatch.setattr(runtime.permissions, "authorize", broken)
    with structlog.testing.capture_logs() as logs:
        result = await runtime.call("priv", caller="cli")
    assert any(e["event"] == "call pipeline failed" for e in logs)
    assert not result.ok
    assert result.error.code is ErrorCode.TOOL_FAILED
    assert len(records_for(runtime.audit.path, _last_request(runtime))) == 1


# -- the context a tool sees --------------------------------------------------------------


@pytest.mark.anyio
async def test_the_context_carries_the_caller_request_id_and_cwd(
    runtime: Runtime, tmp_path: Any
) -> None:
    seen: dict[str, Any] = {}

    async def inspect_ctx(ctx: ToolContext, args: NoArgs) -> None:
        seen.update(
            caller=ctx.caller.caller,
            session=ctx.caller.session_id,
            space=ctx.caller.space_id,
            tab=ctx.caller.tab_id,
            cwd=ctx.cwd,
            request_id=ctx.request_id,
            home=ctx.home.root,
            trusted=ctx.caller.trusted,
            plugin=ctx.plugin_id,
        )

    runtime.register(make_tool(inspect_ctx))
    caller = CallerInfo(
        CallerKind.AGENT, session_id="agent:s1", cwd=str(tmp_path), space_id="space_1", tab_id="t"
    )
    await runtime.call("inspect_ctx", caller=caller, request_id="req_fixed")
    assert seen == {
        "caller": CallerKind.AGENT,
        "session": "agent:s1",
        "space": "space_1",
        "tab": "t",
        "cwd": str(tmp_path),
        "request_id": "req_fixed",
        "home": runtime.home.root,
        "trusted": False,
        "plugin": "app",
    }


@pytest.mark.anyio
async def test_the_context_logger_is_bound_with_request_session_and_tool(
    runtime: Runtime,
) -> None:
    async def logs(ctx: ToolContext, args: NoArgs) -> None:
        ctx.logger.warning("hello from the tool")

    runtime.register(make_tool(logs))
    with structlog.testing.capture_logs() as captured:
        await runtime.call(
            "logs", caller=CallerInfo(CallerKind.AGENT, session_id="agent:x"), request_id="req_log"
        )
    entry = next(e for e in captured if e["event"] == "hello from the tool")
    assert entry["requestId"] == "req_log"
    assert entry["sessionId"] == "agent:x"
    assert entry["toolName"] == "logs"


@pytest.mark.anyio
async def test_a_tool_argument_named_cwd_defaults_to_the_callers_cwd(
    runtime: Runtime, tmp_path: Any
) -> None:
    class CwdArgs(BaseModel):
        model_config = ConfigDict(extra="forbid")
        cwd: str

    async def where(ctx: ToolContext, args: CwdArgs) -> str:
        return args.cwd

    runtime.register(make_tool(where, input=CwdArgs))
    caller = CallerInfo(CallerKind.INTERNAL, cwd=str(tmp_path))
    assert (await runtime.call("where", caller=caller)).content == str(tmp_path)
    assert (await runtime.call("where", {"cwd": "/x"}, caller=caller)).content == "/x"


# -- nested calls -----------------------------------------------------------------------


@pytest.mark.anyio
async def test_ctx_call_tool_runs_as_caller_plugin_with_the_bound_plugin_id(
    runtime: Runtime,
) -> None:
    async def whoami(ctx: ToolContext, args: NoArgs) -> dict[str, Any]:
        return {
            "caller": ctx.caller.caller.value,
            "session": ctx.caller.session_id,
            "plugin": ctx.caller.plugin_id,
        }

    async def outer(ctx: ToolContext, args: NoArgs) -> Any:
        return (await ctx.call_tool("whoami")).content

    runtime.load_plugin("alpha", plugin_class(make_tool(outer)))
    runtime.load_plugin("beta", plugin_class(make_tool(whoami)))
    # Whoever calls `outer`, the nested call is made by plugin alpha.
    for caller in [CallerKind.INTERNAL, runtime.open_session("cli")]:
        result = await runtime.call("outer", caller=caller)
        assert result.content == {"caller": "plugin", "session": "plugin:alpha", "plugin": "alpha"}
    nested = [r for r in runtime.audit.read() if r["toolName"] == "whoami"]
    assert len(nested) == 2
    assert all(r["caller"] == "plugin" and r["pluginId"] == "alpha" for r in nested)


@pytest.mark.anyio
async def test_a_sync_tool_can_call_another_tool(runtime: Runtime) -> None:
    async def inner(ctx: ToolContext, args: TextArgs) -> str:
        return args.text.upper()

    def outer_sync(ctx: ToolContext, args: TextArgs) -> Any:
        return ctx.call_tool_blocking("inner", {"text": args.text}).content

    runtime.load_plugin(
        "p", plugin_class(make_tool(inner, input=TextArgs), make_tool(outer_sync, input=TextArgs))
    )
    assert (await runtime.call("outer_sync", {"text": "abc"})).content == "ABC"


@pytest.mark.anyio
async def test_nested_calls_go_through_the_permission_gates(runtime: Runtime) -> None:
    async def write(ctx: ToolContext, args: NoArgs) -> str:
        return "written"

    async def relay(ctx: ToolContext, args: NoArgs) -> Any:
        return (await ctx.call_tool("write")).to_wire()

    runtime.load_plugin("writer", plugin_class(make_tool(write, "writes-files")))
    runtime.load_plugin("relay", plugin_class(make_tool(relay)))
    runtime.approve_plugin("writer")
    # `relay` is not approved: as a caller it may not use writes-files, even though the
    # internal caller of `relay` is trusted.
    result = await runtime.call("relay")
    assert result.content["error"]["code"] == "PERMISSION_DENIED"


@pytest.mark.anyio
async def test_tool_calls_nested_too_deep_fail_instead_of_looping(runtime: Runtime) -> None:
    async def loop(ctx: ToolContext, args: NoArgs) -> Any:
        inner = await ctx.call_tool("loop")
        return {"depth": (inner.content or {}).get("depth", 0) + 1, "inner": inner.to_wire()}

    runtime.register(make_tool(loop))
    result = await runtime.call("loop")
    assert result.ok
    depth = result.content["depth"]
    assert depth == MAX_NESTED_CALLS
    innermost = result.content
    while "content" in innermost["inner"]:
        innermost = innermost["inner"]["content"]
    assert innermost["inner"]["error"]["code"] == "TOOL_FAILED"
    assert "nested" in innermost["inner"]["error"]["message"]


@pytest.mark.anyio
async def test_sync_tools_calling_tools_in_a_loop_also_stop_at_the_nesting_limit(
    runtime: Runtime,
) -> None:
    def loop_sync(ctx: ToolContext, args: NoArgs) -> Any:
        inner = ctx.call_tool_blocking("loop_sync")
        return {"depth": (inner.content or {}).get("depth", 0) + 1}

    runtime.register(make_tool(loop_sync))
    result = await runtime.call("loop_sync")
    assert result.content == {"depth": MAX_NESTED_CALLS}
