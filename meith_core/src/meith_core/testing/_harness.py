"""`MeithHarness`: an in-process runtime on a private MEITH_HOME for testing one plugin.

The runtime runs on an event loop in a helper thread (an anyio blocking portal), so the same
harness serves sync tests (`call`) and async tests (`await acall`), whatever loop they use.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from anyio.from_thread import BlockingPortal, start_blocking_portal

from meith_core.base.home import MeithHome
from meith_core.host.plugins.manager import PluginRecord
from meith_core.host.runtime import Runtime
from meith_core.protocol.caller import CallerInfo, CallerKind
from meith_core.protocol.results import ToolResult

T = TypeVar("T")
#: Who a harness call acts as: a kind (a fresh session of it) or a session from `grant`.
Caller = CallerInfo | CallerKind | str


class PluginLoadError(RuntimeError):
    """The plugin under test did not load; the message has the reason and traceback."""


class MeithHarness:
    """A runtime loading the plugin under test (by entry point id, or a plugin object) and,
    unless `also` names more, no other plugin than the built-in `core`."""

    def __init__(
        self,
        home: Path,
        plugin_id: str,
        *,
        plugin: Any = None,
        also: Iterable[str] = (),
        cwd: Path | str | None = None,
    ) -> None:
        self.home = MeithHome(Path(home))
        self.plugin_id = plugin_id
        self.cwd = str(cwd) if cwd is not None else os.getcwd()
        #: The streamed events (progress, log, partial_text, artifact) of the latest call.
        self.events: list[dict[str, Any]] = []
        self._object = plugin
        self._also = set(also)
        self._portal: BlockingPortal | None = None
        self._portal_cm: contextlib.AbstractContextManager[BlockingPortal] | None = None
        self._runtime: Runtime | None = None

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> MeithHarness:
        self._portal_cm = start_blocking_portal("asyncio")
        self._portal = self._portal_cm.__enter__()
        try:
            self._runtime = self._portal.call(self._start)
            record = self.record
            if record.status != "loaded":
                raise PluginLoadError(
                    f"plugin {self.plugin_id!r} {record.status}: {record.reason}\n"
                    f"{record.traceback or ''}"
                )
        except BaseException:
            self.close()
            raise
        return self

    async def _start(self) -> Runtime:
        rt = Runtime(
            self.home,
            load_plugins=self._object is None or bool(self._also),
            plugin_allow={self.plugin_id, *self._also} if self._object is None else self._also,
            plugin_deny=set(),
            cwd=self.cwd,
        )
        if self._object is not None:
            rt.load_plugin(self.plugin_id, self._object)
        await rt.start()
        if self.plugin_id not in rt.plugins.records:
            await rt.aclose()
            installed = sorted(set(rt.plugins.records) - {"core"}) or ["none"]
            raise PluginLoadError(
                f"no plugin {self.plugin_id!r} in the entry points of group meith.plugins "
                f"(loaded: {', '.join(installed)}); is the distribution installed "
                "(pip install -e .)?"
            )
        return rt

    def close(self) -> None:
        if self._portal is not None and self._runtime is not None:
            self._portal.call(self._runtime.aclose)
        self._runtime = None
        if self._portal_cm is not None:
            self._portal_cm.__exit__(None, None, None)
        self._portal = self._portal_cm = None

    def __enter__(self) -> MeithHarness:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- what was loaded ----------------------------------------------------------------

    @property
    def runtime(self) -> Runtime:
        if self._runtime is None:
            raise RuntimeError("the harness is not running")
        return self._runtime

    @property
    def record(self) -> PluginRecord:
        return self.runtime.plugins.records[self.plugin_id]

    @property
    def plugin(self) -> Any:
        """The plugin object the runtime uses (an instance when the plugin is a class)."""
        return self.record.obj

    def tools(self) -> dict[str, dict[str, Any]]:
        """The wire descriptors of every registered tool, by name."""
        return {d["name"]: d for d in self.runtime.describe()}

    # -- permissions --------------------------------------------------------------------

    def approve(self, capabilities: Iterable[str] | None = None) -> None:
        """Approve the plugin under test (all it requests by default), as `meith plugins
        approve` does: its privileged tools may then run for callers holding a grant."""
        self.runtime.approve_plugin(self.plugin_id, capabilities)

    def session(
        self, caller: CallerKind | str = CallerKind.AGENT, *, cwd: Path | str | None = None
    ) -> CallerInfo:
        """A new session of `caller` (`agent` or `cli`) with no grant yet, opened for `cwd`
        (default the harness's directory): its workspace, where an agent's reads reach."""
        return self.runtime.open_session(caller, cwd=str(cwd) if cwd is not None else self.cwd)

    def grant(
        self,
        capabilities: Iterable[str],
        *,
        caller: Caller = CallerKind.AGENT,
        confine_to: Path | str | None = None,
        tool: str | None = None,
        uses: int | None = None,
    ) -> CallerInfo:
        """Grant `capabilities` to a session (a new one of kind `caller`, or the given one),
        optionally confined to a directory; pass the returned session as `caller=`."""
        session = caller if isinstance(caller, CallerInfo) else self.session(caller)
        self.runtime.grant(
            session,
            list(capabilities),
            tool=tool,
            uses=uses,
            cwd_prefix=None if confine_to is None else os.path.realpath(confine_to),
        )
        return session

    # -- calling ------------------------------------------------------------------------

    def caller_info(
        self, caller: Caller, *, cwd: Path | str | None = None, plugin_id: str | None = None
    ) -> CallerInfo:
        where = str(cwd) if cwd is not None else self.cwd
        if isinstance(caller, CallerInfo):
            return caller if cwd is None else caller.with_cwd(where)
        kind = CallerKind(caller)
        # A caller made here is a session opened for `where`: its workspace too.
        if kind is CallerKind.PLUGIN:
            return CallerInfo.for_plugin(plugin_id or self.plugin_id, cwd=where, workspace=where)
        if kind in (CallerKind.CLI, CallerKind.AGENT):
            return self.runtime.open_session(kind, cwd=where)
        return CallerInfo(caller=kind, cwd=where, workspace=where)

    def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        caller: Caller = CallerKind.CLI,
        cwd: Path | str | None = None,
        plugin_id: str | None = None,
        timeout_ms: int | None = None,
    ) -> ToolResult:
        """Call a tool through the whole pipeline and return its ToolResult (never raises).

        `caller` is `cli` (default), `agent`, `plugin` (as the plugin under test, or
        `plugin_id`), `internal`, or a session from `session`/`grant`.
        """
        return self._on_loop(self._call, name, arguments, caller, cwd, plugin_id, timeout_ms)

    async def acall(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        caller: Caller = CallerKind.CLI,
        cwd: Path | str | None = None,
        plugin_id: str | None = None,
        timeout_ms: int | None = None,
    ) -> ToolResult:
        """`call` for async tests."""
        return await self.arun(self._call, name, arguments, caller, cwd, plugin_id, timeout_ms)

    async def _call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        caller: Caller,
        cwd: Path | str | None,
        plugin_id: str | None,
        timeout_ms: int | None,
    ) -> ToolResult:
        events: list[dict[str, Any]] = []
        self.events = events
        return await self.runtime.call(
            name,
            dict(arguments or {}),
            caller=self.caller_info(caller, cwd=cwd, plugin_id=plugin_id),
            timeout_ms=timeout_ms,
            on_event=lambda event: events.append(dict(event)),
        )

    def run(self, func: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run `await func(*args)` on the runtime's event loop (e.g. a plugin's own coroutine)."""
        return self._on_loop(func, *args)

    async def arun(self, func: Callable[..., Awaitable[T]], *args: Any) -> T:
        """`run` for async tests."""
        if self._portal is None:
            raise RuntimeError("the harness is not running")
        return await asyncio.wrap_future(self._portal.start_task_soon(func, *args))

    def _on_loop(self, func: Callable[..., Awaitable[T]], *args: Any) -> T:
        if self._portal is None:
            raise RuntimeError("the harness is not running")
        return self._portal.call(func, *args)

    # -- audit and settings -------------------------------------------------------------

    def audit(self, tool: str | None = None, *, every_record: bool = False) -> list[dict[str, Any]]:
        """The audit records of this test's calls (the home is the test's), oldest first: one
        outcome record per call, only those of `tool` when given. `every_record=True` adds the
        records that are not outcomes (the intent written before a privileged call runs, ...)."""
        return [
            r
            for r in self.runtime.audit.read()
            if (tool is None or r.get("toolName") == tool) and (every_record or "kind" not in r)
        ]

    def set_settings(self, section: str, value: Any) -> None:
        """Write one section of settings.json (validated by the plugin's settings model)."""
        self.runtime.settings.merge({section: value})

    @property
    def settings(self) -> Mapping[str, Any]:
        return self.runtime.settings.snapshot()
