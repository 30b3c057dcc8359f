"""Running the lifecycle hooks (`meith_startup`, `meith_shutdown`, `meith_session_ended`).

Each implementation is called on its own, in pluggy's order, with a `PluginHost` bound to its
plugin, so one plugin's failure or slowness stays its own. Start-up of a plugin loaded into a
runtime that already started is scheduled here and awaited before the runtime's next call.
"""

from __future__ import annotations

import asyncio
import inspect
import time
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from meith_core.host.plugins.manager import PluginManager
from meith_core.host.plugins.pluginhost import PluginHost

_log = structlog.get_logger("meith.runtime")

#: `(plugin_id, shutdown_deadline) -> PluginHost`, built by the runtime.
HostFactory = Callable[[str, float | None], PluginHost]


class LifecycleHooks:
    def __init__(self, plugins: PluginManager, host_for: HostFactory) -> None:
        self._plugins = plugins
        self._host_for = host_for
        #: `meith_startup` of plugins loaded after start, still running.
        self._late: set[asyncio.Task[None]] = set()
        #: Plugins loaded from sync code after start: started before the next call.
        self._deferred: list[str] = []

    @property
    def pending(self) -> bool:
        return bool(self._late or self._deferred)

    async def run(self, hook: str, *, only: str | None = None, **kwargs: Any) -> None:
        """Run `hook` plugin by plugin (`only` one plugin when given)."""
        for plugin_id, thunk in self._plugins.call_each(
            hook, host_for=lambda pid: self._host_for(pid, None), only=only, **kwargs
        ):
            try:
                value = thunk()
                if inspect.isawaitable(value):
                    await value
            except Exception as exc:
                self.failed(plugin_id, hook, exc)

    def start_late(self, plugin_id: str) -> None:
        """Schedule `meith_startup` of a plugin loaded into a started runtime."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # called from sync code: run it before the next call instead
            self._deferred.append(plugin_id)
            return
        task = loop.create_task(self.run("meith_startup", only=plugin_id))
        self._late.add(task)
        task.add_done_callback(self._late.discard)

    async def wait_late(self) -> None:
        while self._deferred:
            await self.run("meith_startup", only=self._deferred.pop(0))
        if self._late:
            await asyncio.gather(*self._late, return_exceptions=True)

    async def shutdown(self, budget_s: float) -> None:
        """Every `meith_shutdown` at once, each seeing the same deadline; late ones are cancelled."""
        deadline = time.monotonic() + budget_s

        async def run(plugin_id: str, value: Awaitable[Any]) -> None:
            try:
                await value
            except Exception as exc:
                self.failed(plugin_id, "meith_shutdown", exc)

        tasks: dict[asyncio.Task[None], str] = {}
        for plugin_id, thunk in self._plugins.call_each(
            "meith_shutdown", host_for=lambda pid: self._host_for(pid, deadline)
        ):
            try:
                value = thunk()
            except Exception as exc:
                self.failed(plugin_id, "meith_shutdown", exc)
                continue
            if inspect.isawaitable(value):
                tasks[asyncio.ensure_future(run(plugin_id, value))] = plugin_id
        if not tasks:
            return
        _, late = await asyncio.wait(tasks, timeout=max(0.0, deadline - time.monotonic()))
        for task in late:
            _log.error("plugin shutdown hook passed the deadline", plugin=tasks[task])
            task.cancel()
        if late:
            await asyncio.wait(late, timeout=0.2)

    def failed(self, plugin_id: str, hook: str, exc: Exception) -> None:
        tb = "".join(traceback.format_exception(exc))
        _log.error(
            "plugin hook failed",
            plugin=plugin_id,
            hook=hook,
            error=f"{type(exc).__name__}: {exc}",
            traceback=tb,
        )
        if hook == "meith_startup":
            self._plugins.mark_failed(plugin_id, f"startup failed: {type(exc).__name__}: {exc}", tb)
