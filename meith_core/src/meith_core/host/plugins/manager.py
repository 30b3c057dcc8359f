"""Discover plugins through entry points and load each one in isolation.

pluggy's own `load_setuptools_entrypoints` stops at the first plugin that fails to import;
here every entry point is loaded on its own, and a failure (at import, at instantiation, in
`meith_tools()`, a duplicate tool name) is recorded with its reason while the rest load.
"""

from __future__ import annotations

import inspect
import os
import time
import traceback
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Literal

import pluggy
import structlog

from meith_core.call.tooldef import ToolDefinition
from meith_core.confine.protected import protect_package
from meith_core.host import logs
from meith_core.host.plugins import hookspecs
from meith_core.host.plugins.api import check_compatible, declared_range
from meith_core.host.plugins.hookspecs import ENTRY_POINT_GROUP, PROJECT_NAME
from meith_core.policy.plugin_approvals import plugin_fingerprint
from meith_core.policy.service import HOST_PROVIDERS
from meith_core.protocol.capabilities import Capability, parse_capabilities

_log = structlog.get_logger("meith.plugins")

PluginStatus = Literal["loaded", "failed", "disabled"]
#: `(tools, plugin_id)`: registers all of a plugin's tools or raises (`Catalogue.register_many`).
RegisterTools = Callable[[list[ToolDefinition], str], None]


@dataclass(slots=True)
class PluginRecord:
    id: str
    status: PluginStatus
    distribution: str | None = None
    version: str | None = None
    reason: str | None = None
    tools: list[ToolDefinition] = field(default_factory=list)
    obj: Any = None
    fingerprint: str | None = None
    entry_point: str | None = None
    #: The formatted traceback of a load or startup failure (`meith plugins --verbose`).
    traceback: str | None = None
    #: Seconds spent importing the entry point (None for objects loaded directly).
    import_s: float | None = None

    @property
    def requested_capabilities(self) -> tuple[Capability, ...]:
        return parse_capabilities(c for t in self.tools for c in t.capabilities)

    def summary(self) -> dict[str, Any]:
        """The JSON shape `meith plugins --json` and `list_plugins` share (minus approval)."""
        return {
            "id": self.id,
            "distribution": self.distribution,
            "version": self.version,
            "status": self.status,
            "reason": self.reason,
            "entryPoint": self.entry_point,
            "tools": [
                {"name": t.name, "capabilities": [c.value for c in t.capabilities]}
                for t in self.tools
            ],
            "requestedCapabilities": [c.value for c in self.requested_capabilities],
            "fingerprint": self.fingerprint,
            "traceback": self.traceback,
            "importMs": None if self.import_s is None else round(self.import_s * 1000, 1),
        }


def env_list(name: str) -> set[str] | None:
    """The comma-separated names in environment variable `name` (MEITH_PLUGINS, ...), or None
    when it is unset or empty."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return None
    return {part.strip() for part in raw.split(",") if part.strip()}


def _short_error(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return text[:500]


class HookOptionError(TypeError):
    """A hook implementation uses something meith does not honour, or names no meith hook."""


def _check_hookimpls(pm: pluggy.PluginManager, plugin: Any) -> None:
    """Refuse what would silently not work: unknown hook names and hook wrappers.

    meith calls each implementation on its own (so one plugin's failure or slowness stays its
    own, and each gets a PluginHost bound to it); `tryfirst`/`trylast` order those calls and
    `meith_approve` stops at the first answer, but there is no wrapper chain to take part in.
    """
    known = sorted(n for n in dir(hookspecs) if n.startswith("meith_"))
    for caller in pm.get_hookcallers(plugin) or []:
        if caller.spec is None:
            raise HookOptionError(
                f"hook {caller.name!r} is not a meith hook (known hooks: {', '.join(known)})"
            )
        for impl in caller.get_hookimpls():
            if impl.plugin is plugin and (impl.hookwrapper or impl.wrapper):
                raise HookOptionError(
                    f"hook {caller.name!r} is declared with hookwrapper/wrapper, which meith does "
                    "not support; remove the option (tryfirst/trylast are supported)"
                )


class PluginManager:
    """Wraps a pluggy PluginManager; keeps one record per discovered plugin id."""

    def __init__(self) -> None:
        logs.default_to_stderr()
        self.pm = pluggy.PluginManager(PROJECT_NAME)
        self.pm.add_hookspecs(hookspecs)
        self.records: dict[str, PluginRecord] = {}
        #: MEITH_TRACE_PLUGINS=1 logs every hook call with its duration.
        self.trace = os.environ.get("MEITH_TRACE_PLUGINS", "") not in ("", "0")

    # -- discovery ----------------------------------------------------------------------

    def discover(
        self,
        register_tools: RegisterTools,
        *,
        allow: set[str] | None = None,
        deny: set[str] | None = None,
        group: str = ENTRY_POINT_GROUP,
    ) -> list[PluginRecord]:
        """Load every entry point of `group`, honouring MEITH_PLUGINS / MEITH_DISABLE_PLUGINS.

        `register_tools(tools, plugin_id)` (`Catalogue.register_many`) must register all
        of a plugin's tools or raise.
        """
        allow = allow if allow is not None else env_list("MEITH_PLUGINS")
        deny = deny if deny is not None else (env_list("MEITH_DISABLE_PLUGINS") or set())
        by_name: dict[str, list[EntryPoint]] = {}
        for ep in entry_points(group=group):
            by_name.setdefault(ep.name, []).append(ep)
        # The built-in `core` first, then the rest in a stable order.
        for name in sorted(by_name, key=lambda n: (n != "core", n)):
            if name in self.records:
                continue  # loaded already by the host itself (the built-in `core` plugin)
            eps = by_name[name]
            ep = eps[0]
            dist = getattr(ep, "dist", None)
            record = PluginRecord(
                id=name,
                status="disabled",
                distribution=dist.name if dist else None,
                version=dist.version if dist else None,
                entry_point=ep.value,
            )
            self.records[name] = record
            if name in HOST_PROVIDERS:
                # These ids pass the provider gate unapproved: only the host may use them.
                record.status = "failed"
                record.reason = f"plugin id {name!r} is reserved for the host"
                continue
            if len({e.value for e in eps}) > 1:
                record.status = "failed"
                record.reason = "plugin id is provided by more than one entry point: " + ", ".join(
                    sorted({f"{e.value} ({e.dist.name if e.dist else '?'})" for e in eps})
                )
                continue
            if name in deny:
                record.reason = "disabled by MEITH_DISABLE_PLUGINS"
                continue
            if allow is not None and name not in allow:
                record.reason = "not listed in MEITH_PLUGINS"
                continue
            began = time.perf_counter()
            try:
                obj = ep.load()
            except BaseException as exc:  # a plugin's import may do anything, SystemExit included
                record.import_s = time.perf_counter() - began
                self._fail(record, f"import failed: {_short_error(exc)}")
                continue
            record.import_s = time.perf_counter() - began
            self._load(record, obj, register_tools)
        return list(self.records.values())

    def load_object(
        self,
        plugin_id: str,
        obj: Any,
        register_tools: RegisterTools,
        *,
        distribution: str | None = None,
        version: str | None = None,
    ) -> PluginRecord:
        """Load a plugin object directly (embedding applications, tests)."""
        record = PluginRecord(
            id=plugin_id, status="disabled", distribution=distribution, version=version
        )
        self.records[plugin_id] = record
        self._load(record, obj, register_tools)
        return record

    def _load(
        self,
        record: PluginRecord,
        obj: Any,
        register_tools: RegisterTools,
    ) -> None:
        registered = False
        try:
            plugin = obj() if inspect.isclass(obj) else obj
            check_compatible(record.id, declared_range(plugin))
            self.pm.register(plugin, name=record.id)
            registered = True
            _check_hookimpls(self.pm, plugin)
            tools = self._call_one(record.id, "meith_tools")
            tools = [] if tools is None else list(tools)
            for item in tools:
                if not isinstance(item, ToolDefinition):
                    raise TypeError(
                        f"meith_tools() must return ToolDefinition objects (use @tool), got {type(item).__name__}"
                    )
            register_tools(tools, record.id)
        except BaseException as exc:
            if registered:
                self.pm.unregister(name=record.id)
            self._fail(record, _short_error(exc))
            return
        record.status = "loaded"
        # Its code is meith's installation from now on: no agent's tool or confined process
        # writes it (what the next `meith` run would execute).
        protect_package(plugin.__name__ if inspect.ismodule(plugin) else type(plugin).__module__)
        record.obj = plugin
        record.tools = tools
        record.fingerprint = plugin_fingerprint(
            record.distribution, record.version, (t.descriptor(record.id) for t in tools)
        )

    def _fail(self, record: PluginRecord, reason: str) -> None:
        """Record a failure with the traceback being handled, and log both."""
        record.status = "failed"
        record.reason = reason
        record.traceback = traceback.format_exc()
        _log.warning(
            "plugin failed to load", plugin=record.id, reason=reason, traceback=record.traceback
        )

    # -- calling hooks ------------------------------------------------------------------

    def _call_one(self, plugin_id: str, hook: str, **kwargs: Any) -> Any:
        for impl in getattr(self.pm.hook, hook).get_hookimpls():
            if impl.plugin_name == plugin_id:
                args = {k: kwargs[k] for k in impl.argnames}
                return self._traced(plugin_id, hook, impl.function, args)()
        return None

    def call_each(
        self,
        hook: str,
        *,
        host_for: Callable[[str], Any] | None = None,
        only: str | None = None,
        **kwargs: Any,
    ) -> Iterable[tuple[str, Callable[[], Any]]]:
        """`(plugin_id, thunk)` for every loaded plugin implementing `hook`, in pluggy's call
        order (`tryfirst` first, `trylast` last, otherwise the latest registered first).

        The caller runs each thunk (and awaits what it returns) so one plugin's failure or
        slowness is handled per plugin. `host_for(plugin_id)` builds the `host` argument, bound
        to that plugin; `only` restricts the calls to one plugin.
        """
        for impl in reversed(getattr(self.pm.hook, hook).get_hookimpls()):
            if only is not None and impl.plugin_name != only:
                continue
            values = dict(kwargs)
            if host_for is not None and "host" in impl.argnames:
                values["host"] = host_for(impl.plugin_name)
            args: dict[str, Any] = {k: values[k] for k in impl.argnames}
            yield impl.plugin_name, self._traced(impl.plugin_name, hook, impl.function, args)

    def _traced(
        self, plugin_id: str, hook: str, func: Callable[..., Any], args: dict[str, Any]
    ) -> Callable[[], Any]:
        if not self.trace:
            return lambda: func(**args)

        def report(began: float, outcome: str) -> None:
            _log.info(
                "plugin hook",
                plugin=plugin_id,
                hook=hook,
                durationMs=round((time.perf_counter() - began) * 1000, 3),
                outcome=outcome,
            )

        async def awaited(value: Awaitable[Any], began: float) -> Any:
            try:
                result = await value
            except BaseException as exc:
                report(began, type(exc).__name__)
                raise
            report(began, "ok")
            return result

        def call() -> Any:
            began = time.perf_counter()
            try:
                value = func(**args)
            except BaseException as exc:
                report(began, type(exc).__name__)
                raise
            if inspect.isawaitable(value):
                return awaited(value, began)
            report(began, "ok")
            return value

        return call

    def fingerprint_of(self, plugin_id: str) -> str | None:
        record = self.records.get(plugin_id)
        return record.fingerprint if record is not None else None

    def mark_failed(self, plugin_id: str, reason: str, tb: str | None = None) -> None:
        record = self.records.get(plugin_id)
        if record is not None:
            record.status = "failed"
            record.reason = reason
            record.traceback = tb
