"""Runtime: the in-process tool host. The socket server, the CLI and embedding programs all
drive tools through one of these.

```python
async with Runtime(home=MeithHome(Path("/tmp/h"))) as rt:
    rt.register(echo)
    result = await rt.call("echo", {"text": "hi"})
```
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from types import TracebackType
from typing import Any

from meith_core.base.cancel import CancelToken
from meith_core.base.home import MeithHome, file_signature
from meith_core.base.home_registry import register_home
from meith_core.call.catalogue import Catalogue
from meith_core.call.context import EventSink
from meith_core.call.pipeline import CallPipeline
from meith_core.call.tooldef import ToolDefinition
from meith_core.host import logs
from meith_core.host.call_approvers import AddedApprover, ApproverChain
from meith_core.host.otel import start_export
from meith_core.host.planted import PlantedFindings
from meith_core.host.plugin_loading import PluginLoading
from meith_core.host.plugins.lifecycle import LifecycleHooks
from meith_core.host.plugins.manager import PluginManager, PluginRecord
from meith_core.host.plugins.pluginhost import PluginHost
from meith_core.host.runtime_sessions import RuntimeSessions
from meith_core.host.settings import SettingsStore, audit_trail
from meith_core.host.trust_edits import TrustEditor
from meith_core.policy.grants import StandingGrants
from meith_core.policy.plugin_approvals import PluginApprovals
from meith_core.policy.service import PermissionService
from meith_core.policy.sessions import Sessions
from meith_core.protocol.caller import CallerInfo, CallerKind
from meith_core.protocol.capabilities import parse_capabilities
from meith_core.protocol.results import ToolResult

#: How long plugins get to shut down: their hooks run at the same time under one deadline
#: (`PluginHost.shutdown_deadline`), and whatever still runs then is cancelled.
SHUTDOWN_HOOK_BUDGET_S = 1.5


class Runtime(RuntimeSessions):
    """Owns the catalogue and call pipeline, permissions, audit, settings and plugins of one host
    (its sessions: `RuntimeSessions`)."""

    def __init__(
        self,
        home: MeithHome | None = None,
        *,
        load_plugins: bool = True,
        plugin_allow: set[str] | None = None,
        plugin_deny: set[str] | None = None,
        cwd: str | None = None,
    ) -> None:
        logs.default_to_stderr()
        self.home = (home or MeithHome.from_env()).ensure()
        # Every runtime's home is hidden from every confined process (base.home_registry).
        register_home(self.home.root)
        self.cwd = cwd or os.getcwd()
        #: Set by the socket server once it listens; None for a purely in-process host.
        self.socket_path: str | None = None
        #: The token-only socket processes started for agent sessions call back on.
        self.child_socket_path: str | None = None
        #: The SocketServer when running under `meith serve` (health reporting).
        self.server: Any = None
        self.plugins = PluginManager()
        self.settings = SettingsStore(self.home.settings_path)
        self.audit = audit_trail(self.home.audit_path, self.settings)
        #: What confinement found planted by confined processes (audit, `app_health`).
        self.planted = PlantedFindings(self.audit)
        #: Every session of this runtime, each one `Session` holding all the runtime keeps for it.
        self.sessions = Sessions()
        self._approvers = ApproverChain(self.plugins, self.sessions)
        #: The OpenTelemetry export, when one is configured (`host.otel`); None costs nothing.
        self.telemetry = start_export(os.environ, self.settings.snapshot())
        if self.telemetry is not None:
            self.audit.observer = self.telemetry
        #: Approvers the embedding program adds, asked after the plugins' `meith_approve`.
        self.approvers: list[AddedApprover] = self._approvers.added
        self.permissions = PermissionService(
            plugin_approvals=PluginApprovals(self.home.plugins_path),
            standing=StandingGrants(self.home.grants_path),
            fingerprint_of=self.plugins.fingerprint_of,
            approver=self._approvers,
            sessions=self.sessions,
        )
        #: Which tools exist; `pipeline` is the one path that runs them.
        self.catalogue = Catalogue()
        self.pipeline = CallPipeline(
            catalogue=self.catalogue,
            permissions=self.permissions,
            audit=self.audit,
            home=self.home,
            settings=self.settings.snapshot,
        )
        self._loading = PluginLoading(
            self.plugins,
            self.catalogue,
            self.settings,
            load_installed=load_plugins,
            allow=plugin_allow,
            deny=plugin_deny,
        )
        self._started = False
        self._closed = False
        self.pipeline.child_environment = self.child_environment
        self._hooks = LifecycleHooks(
            self.plugins,
            lambda pid, deadline: self.plugin_host(pid, shutdown_deadline=deadline),
        )
        self.pipeline.on_unknown_tool = self._load_for_unknown_tool

    # -- lifecycle ----------------------------------------------------------------------

    def discover_plugins(self) -> list[PluginRecord]:
        """Load the installed plugins and register their tools, without starting them.

        (`meith plugins` and `meith settings` use this: no plugin starts anything.)
        """
        self._loading.discover(self._core_plugin)
        return list(self.plugins.records.values())

    def _core_plugin(self) -> object:
        from meith_core.host.builtin import CorePlugin

        return CorePlugin(self)

    def load_new_plugins(self, *, force: bool = False) -> list[PluginRecord]:
        """Load plugins installed since the runtime discovered its plugins; returns them.

        Cheap when nothing was installed (a `stat` of each import directory), so it runs
        whenever tools or plugins are listed and before a call is answered UNKNOWN_TOOL.
        `force` looks even when no directory changed, and retries plugins that failed to load
        (e.g. before a missing dependency was installed). A plugin upgraded or removed while
        the runtime runs keeps its loaded code until a restart.
        """
        if self._closed:
            return []
        new = self._loading.load_new(force=force)
        self._start_late([r.id for r in new if r.status == "loaded"])
        return new

    async def _load_for_unknown_tool(self) -> None:
        """A call names no known tool: perhaps a plugin installed since provides it."""
        if self.load_new_plugins():
            await self._hooks.wait_late()

    async def wait_late_startups(self) -> None:
        """Until the `meith_startup` of every plugin loaded after start has returned."""
        await self._hooks.wait_late()

    def _start_late(self, plugin_ids: list[str]) -> None:
        """Run the `meith_startup` of plugins loaded into a runtime that already started."""
        if self._started:
            for plugin_id in plugin_ids:
                self._hooks.start_late(plugin_id)

    async def start(self) -> Runtime:
        if self._started:
            return self
        self._started = True
        self.discover_plugins()
        await self._hooks.run("meith_startup")
        return self

    def load_plugin(self, plugin_id: str, obj: Any, *, version: str | None = None) -> PluginRecord:
        """Load a plugin object that is not installed as an entry point (tests, embedding).

        Into a runtime that already started, the plugin's `meith_startup` is scheduled at once
        and awaited before the next `call` (or await `add_plugin` instead).
        """
        record = self._loading.load_object(plugin_id, obj, version=version)
        if self._started and not self._closed and record.status == "loaded":
            self._hooks.start_late(plugin_id)
        return record

    async def add_plugin(
        self, plugin_id: str, obj: Any, *, version: str | None = None
    ) -> PluginRecord:
        """`load_plugin`, then wait for its `meith_startup` when the runtime already started."""
        record = self.load_plugin(plugin_id, obj, version=version)
        await self._hooks.wait_late()
        return record

    async def aclose(self) -> None:
        """Stop: refuse new calls, cancel in-flight ones, run plugins' shutdown hooks."""
        if self._closed:
            return
        self._closed = True
        self.pipeline.begin_shutdown()
        self.pipeline.cancel_all()
        await self.pipeline.drain(0.3)
        for record in self.sessions:
            await self.close_session(record.session_id)
        await self._hooks.wait_late()
        if self._started:
            await self._hooks.shutdown(SHUTDOWN_HOOK_BUDGET_S)
        self.audit.close()
        if self.telemetry is not None:
            import anyio.to_thread

            await anyio.to_thread.run_sync(self.telemetry.shutdown)

    async def __aenter__(self) -> Runtime:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- tools --------------------------------------------------------------------------

    def register(
        self, tools: ToolDefinition | Iterable[ToolDefinition], *, plugin_id: str = "app"
    ) -> None:
        """Register tools of the embedding application itself (approved implicitly as part of
        the host, like the built-in `core` tools)."""
        batch = [tools] if isinstance(tools, ToolDefinition) else list(tools)
        self.catalogue.register_many(batch, plugin_id)

    async def call(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        caller: CallerInfo | CallerKind | str = CallerKind.INTERNAL,
        timeout_ms: int | None = None,
        on_event: EventSink | None = None,
        cancel: CancelToken | None = None,
        request_id: str | None = None,
    ) -> ToolResult:
        """Call a tool through the full pipeline. The default caller is `internal` (trusted:
        the program embedding the runtime); pass a session's `caller` to act as an agent."""
        if not isinstance(caller, CallerInfo):
            caller = CallerInfo(caller=CallerKind(caller), cwd=self.cwd)
        else:
            self.sessions.count_call(caller.session_id)
        if self._hooks.pending:
            await self._hooks.wait_late()
        return await self.pipeline.call(
            caller,
            name,
            arguments,
            timeout_ms=timeout_ms,
            cancel=cancel,
            emit=on_event,
            request_id=request_id,
        )

    def describe(self) -> list[dict[str, Any]]:
        return self.catalogue.describe()

    def approve_plugin(
        self,
        plugin_id: str,
        capabilities: Iterable[str] | None = None,
        *,
        by: str = "the local user (in-process)",
    ) -> None:
        """Approve a loaded plugin (all it requests by default), as `meith plugins approve` does.

        Writes `plugins.json` and audits the change (`by`: through which door); the approval
        is pinned to the plugin's current fingerprint.
        """
        record = self.plugins.records.get(plugin_id)
        if record is None or record.status != "loaded" or record.fingerprint is None:
            raise ValueError(f"plugin {plugin_id!r} is not loaded")
        requested = record.requested_capabilities
        caps = requested if capabilities is None else [c for c in capabilities if c in requested]
        TrustEditor(self.home, by, audit=self.audit).approve_plugin(
            plugin_id,
            caps,
            record.fingerprint,
            distribution=record.distribution,
            version=record.version,
            tools=record.summary()["tools"],
        )

    def tool_listing(self) -> list[dict[str, Any]]:
        """Descriptors with `approved`: whether a privileged tool's plugin approval covers it."""
        self.load_new_plugins()
        allowed = self.permissions.provider_approved
        return [
            {**d, "approved": allowed(d["plugin"] or "", parse_capabilities(d["capabilities"]))}
            for d in self.catalogue.describe()
        ]

    def catalogue_version(self) -> tuple[object, ...]:
        """Changes whenever `tool_listing()` may: a registration or an edit of plugins.json.

        Cheap (a few stats): watchers poll it instead of the call path checking anything. A
        plugin installed since the last look is loaded first, so watchers hear of its tools."""
        self.load_new_plugins()
        # The descriptor list itself, not its id: holding it means a new list never reuses
        # the id of the one compared against, and an unchanged one compares by identity.
        return (self.catalogue.describe(), file_signature(self.home.plugins_path))

    # -- hooks --------------------------------------------------------------------------

    def plugin_host(self, plugin_id: str, *, shutdown_deadline: float | None = None) -> PluginHost:
        """The view of this runtime a plugin's hooks get, bound to that plugin."""
        return PluginHost(
            plugin_id=plugin_id,
            home=self.home,
            socket_path=self.socket_path,
            cwd=self.cwd,
            shutdown_deadline=shutdown_deadline,
            _call=self._call_as_plugin,
            _report=self.planted.record,
        )

    async def _call_as_plugin(
        self, plugin_id: str, name: str, arguments: dict[str, Any], timeout_ms: int | None
    ) -> ToolResult:
        caller = CallerInfo.for_plugin(plugin_id, cwd=self.cwd)
        return await self.pipeline.call(caller, name, arguments, timeout_ms=timeout_ms)
