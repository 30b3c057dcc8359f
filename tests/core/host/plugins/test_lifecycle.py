"""Hook semantics at start-up and shutdown: a PluginHost instead of the Runtime, pluggy ordering,
refused options, late start-up, concurrent shutdown under one deadline, failures and tracing."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from typing import Any

import pytest
import structlog
from pydantic import BaseModel, ConfigDict

from meith_core import (
    ApprovalAnswer,
    MeithHome,
    PluginHost,
    Runtime,
    ToolArgs,
    ToolContext,
    hookimpl,
    tool,
)
from meith_core.host import runtime as host_module


class _NoArgs(ToolArgs):
    pass


def _ro_tool(name: str) -> Any:
    async def run(ctx: ToolContext, args: _NoArgs) -> str:
        return name

    return tool(run, name=name, description=f"The {name} tool.", capabilities=["read-only"])


class Recorder:
    """A plugin that records what its hooks receive."""

    def __init__(self, log: list[tuple[str, str]] | None = None, name: str = "rec") -> None:
        self.log = log if log is not None else []
        self.name = name
        self.hosts: list[PluginHost] = []

    @hookimpl
    def meith_tools(self) -> list[Any]:
        return [_ro_tool(f"{self.name}_tool")]

    @hookimpl
    async def meith_startup(self, host: PluginHost) -> None:
        self.hosts.append(host)
        self.log.append(("startup", self.name))

    @hookimpl
    def meith_session_ended(self, host: PluginHost, session_id: str) -> None:
        self.log.append(("session_ended", self.name))


@pytest.mark.anyio
async def test_hooks_receive_a_frozen_plugin_host_bound_to_the_plugin(
    meith_home: MeithHome,
) -> None:
    plugin = Recorder()
    async with Runtime(meith_home, load_plugins=False, cwd="/somewhere") as rt:
        rt.load_plugin("rec", plugin)
        await rt.call("rec_tool")  # waits for the late start-up
        (host,) = plugin.hosts
        assert not isinstance(host, Runtime)
        assert (host.plugin_id, host.home, host.socket_path, host.cwd) == (
            "rec",
            meith_home,
            None,
            "/somewhere",
        )
        assert host.shutdown_deadline is None
        assert host.remaining_s() is None
        with pytest.raises(dataclasses.FrozenInstanceError):
            host.plugin_id = "core"  # type: ignore[misc]
        result = await host.call_tool("app_health")
        assert result.ok, result
    records = [r for r in rt.audit.read() if r.get("toolName") == "app_health"]
    assert records
    assert records[-1]["caller"] == "plugin"
    assert records[-1]["sessionId"] == "plugin:rec"


@pytest.mark.anyio
async def test_a_plugin_loaded_after_start_gets_meith_startup(meith_home: MeithHome) -> None:
    async with Runtime(meith_home, load_plugins=False) as rt:
        plugin = Recorder()
        await rt.add_plugin("late", plugin)
        assert plugin.log == [("startup", "rec")]
        other = Recorder(name="other")
        rt.load_plugin("other", other)
        assert (await rt.call("other_tool")).content == "other_tool"
        assert other.log == [("startup", "other")]
    assert plugin.log == [("startup", "rec")]  # once, not again at close


class _First(Recorder):
    @hookimpl(tryfirst=True)
    async def meith_startup(self, host: PluginHost) -> None:
        self.log.append(("startup", self.name))

    @hookimpl(tryfirst=True)
    def meith_approve(self, request: Any) -> Any:
        self.log.append(("approve", self.name))
        return None  # no opinion: the next approver decides


class _Last(Recorder):
    @hookimpl(trylast=True)
    async def meith_startup(self, host: PluginHost) -> None:
        self.log.append(("startup", self.name))

    @hookimpl(trylast=True)
    def meith_approve(self, request: Any) -> Any:
        self.log.append(("approve", self.name))
        return ApprovalAnswer.DENY


class _Middle(Recorder):
    @hookimpl
    def meith_approve(self, request: Any) -> Any:
        self.log.append(("approve", self.name))
        return ApprovalAnswer.ALLOW_ONCE


class _Writer:
    @hookimpl
    def meith_tools(self) -> list[Any]:
        async def run(ctx: ToolContext, args: _NoArgs) -> str:
            return "written"

        return [tool(run, name="w_tool", description="Writes.", capabilities=["writes-files"])]


@pytest.mark.anyio
async def test_tryfirst_trylast_order_the_calls_and_approve_stops_at_the_first_answer(
    meith_home: MeithHome,
) -> None:
    log: list[tuple[str, str]] = []
    rt = Runtime(meith_home, load_plugins=False)
    rt.load_plugin("last", _Last(log, "last"))
    rt.load_plugin("first", _First(log, "first"))
    rt.load_plugin("middle", _Middle(log, "middle"))
    rt.load_plugin("writer", _Writer)
    rt.approve_plugin("writer")
    async with rt:
        startups = [name for kind, name in log if kind == "startup"]
        assert startups[0] == "first"
        assert startups[-1] == "last"
        log.clear()
        session = rt.open_session("agent")
        result = await rt.call("w_tool", caller=session)
        assert result.ok, result  # the middle plugin's answer; the last one is never asked
        assert log == [("approve", "first"), ("approve", "middle")]


class _Wrapper:
    @hookimpl(wrapper=True)
    def meith_startup(self, host: PluginHost) -> Any:
        return (yield)


class _OldWrapper:
    @hookimpl(hookwrapper=True)
    def meith_startup(self, host: PluginHost) -> Any:
        yield


class _Misspelt:
    @hookimpl
    def meith_startp(self, host: PluginHost) -> None:
        pass


class _OldSignature:
    @hookimpl
    def meith_startup(self, runtime: Any) -> None:
        pass


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("plugin", "reason"),
    [
        (
            _Wrapper,
            "hook 'meith_startup' is declared with hookwrapper/wrapper, which meith does not support",
        ),
        (_OldWrapper, "hook 'meith_startup' is declared with hookwrapper/wrapper"),
        (_Misspelt, "hook 'meith_startp' is not a meith hook (known hooks: meith_approve,"),
        (_OldSignature, "PluginValidationError"),
    ],
)
async def test_what_meith_does_not_honour_fails_to_load_with_a_message(
    runtime: Runtime, plugin: Any, reason: str
) -> None:
    record = runtime.load_plugin("odd", plugin)
    assert record.status == "failed"
    assert reason in (record.reason or ""), record.reason
    assert record.traceback
    assert "Traceback" in record.traceback
    assert "odd" not in runtime.plugins.pm.list_name_plugin()  # type: ignore[comparison-overlap]


class _Handshake:
    """Two plugins whose shutdowns finish only if they run at the same time."""

    def __init__(self, mine: asyncio.Event, theirs: asyncio.Event) -> None:
        self.mine, self.theirs = mine, theirs
        self.deadline: float | None = None
        self.done = False

    @hookimpl
    async def meith_shutdown(self, host: PluginHost) -> None:
        self.deadline = host.shutdown_deadline
        self.mine.set()
        await self.theirs.wait()
        self.done = True


class _Hangs:
    def __init__(self) -> None:
        self.cancelled = False

    @hookimpl
    async def meith_shutdown(self, host: PluginHost) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise


@pytest.mark.anyio
async def test_shutdown_hooks_run_concurrently_under_one_deadline(
    meith_home: MeithHome, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The hanging hook is cancelled at the deadline, whatever the budget: a short one here.
    monkeypatch.setattr(host_module, "SHUTDOWN_HOOK_BUDGET_S", 0.3)
    a_ready, b_ready = asyncio.Event(), asyncio.Event()
    a, b, hangs = _Handshake(a_ready, b_ready), _Handshake(b_ready, a_ready), _Hangs()
    rt = Runtime(meith_home, load_plugins=False)
    for pid, plugin in (("a", a), ("hangs", hangs), ("b", b)):
        rt.load_plugin(pid, plugin)
    await rt.start()
    before = time.monotonic()
    await rt.aclose()
    assert a.done
    assert b.done
    assert a.deadline is not None
    assert a.deadline == b.deadline
    assert a.deadline >= before
    assert hangs.cancelled


def test_the_first_party_shutdown_budgets_fit_the_deadline() -> None:
    from meith_plugins_browser import browser
    from meith_plugins_process import plugin as process

    budget = host_module.SHUTDOWN_HOOK_BUDGET_S
    assert budget > browser.CLOSE_BUDGET_S + browser.STOP_DRIVER_BUDGET_S
    # the process plugin also waits up to 0.2 s for exit statuses
    assert budget > process.SHUTDOWN_GRACE_S + process.SHUTDOWN_KILL_WAIT_S + 0.2


class _Broken:
    @hookimpl
    def meith_tools(self) -> list[Any]:
        raise RuntimeError("needs a program that is missing")


class _StartupFails(Recorder):
    @hookimpl
    async def meith_startup(self, host: PluginHost) -> None:
        raise OSError("port taken")


@pytest.mark.anyio
async def test_failures_keep_their_traceback_and_are_logged(meith_home: MeithHome) -> None:
    with structlog.testing.capture_logs() as logs:
        async with Runtime(meith_home, load_plugins=False) as rt:
            broken = rt.load_plugin("broken", _Broken)
            await rt.add_plugin("starts_badly", _StartupFails(name="sb"))
    assert broken.traceback
    assert "needs a program that is missing" in broken.traceback
    assert 'in meith_tools\n    raise RuntimeError("needs a program' in broken.traceback
    started = rt.plugins.records["starts_badly"]
    assert started.status == "failed"
    assert started.reason == "startup failed: OSError: port taken"
    assert started.traceback
    assert "OSError: port taken" in started.traceback
    failed = {e["plugin"]: e for e in logs if e.get("plugin") in ("broken", "starts_badly")}
    assert "needs a program" in failed["broken"]["traceback"]
    assert "port taken" in failed["starts_badly"]["traceback"]


@pytest.mark.anyio
async def test_meith_trace_plugins_logs_every_hook_call_with_its_duration(
    meith_home: MeithHome, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEITH_TRACE_PLUGINS", "1")
    saved = structlog.get_config()
    # The test configuration keeps only warnings; the trace is logged at info.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))
    try:
        logs = await _traced_run(meith_home)
    finally:
        structlog.configure(**saved)
    traced = [(e["plugin"], e["hook"]) for e in logs if e["event"] == "plugin hook"]
    assert ("rec", "meith_tools") in traced
    assert ("rec", "meith_startup") in traced
    assert ("rec", "meith_session_ended") in traced
    assert ("core", "meith_tools") in traced
    assert all(isinstance(e["durationMs"], float) for e in logs if e["event"] == "plugin hook")


async def _traced_run(meith_home: MeithHome) -> list[dict[str, Any]]:
    with structlog.testing.capture_logs() as logs:
        async with Runtime(meith_home, load_plugins=False) as rt:
            rt.load_plugin("rec", Recorder())
            await rt.call("rec_tool")
            session = rt.open_session("agent")
            await rt.close_session(session)
    return logs


class _Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")


@pytest.fixture
def late_from_sync_code(runtime: Runtime) -> Recorder:
    plugin = Recorder(name="sync")
    runtime.load_plugin("sync_loaded", plugin)  # no running loop here
    return plugin


@pytest.mark.anyio
async def test_a_plugin_loaded_from_sync_code_starts_before_the_next_call(
    runtime: Runtime, late_from_sync_code: Recorder
) -> None:
    assert late_from_sync_code.log == []
    assert (await runtime.call("sync_tool")).ok
    assert late_from_sync_code.log == [("startup", "sync")]
