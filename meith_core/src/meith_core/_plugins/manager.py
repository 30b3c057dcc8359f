"""Discover plugins through entry points and load each one in isolation.

pluggy's own `load_setuptools_entrypoints` stops at the first plugin that fails to import;
here every entry point is loaded on its own, and a failure (at import, at instantiation, in
`meith_tools()`, a duplicate tool name) is recorded with its reason while the rest load.
"""

from __future__ import annotations

import functools
import inspect
import os
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Literal

import pluggy

from meith_core._capabilities import Capability, parse_capabilities
from meith_core._permissions.approvals import plugin_fingerprint
from meith_core._permissions.service import HOST_PROVIDERS
from meith_core._plugins import hookspecs
from meith_core._plugins.hookspecs import ENTRY_POINT_GROUP, PROJECT_NAME
from meith_core._tooldef import ToolDefinition

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


class PluginManager:
    """Wraps a pluggy PluginManager; keeps one record per discovered plugin id."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager(PROJECT_NAME)
        self.pm.add_hookspecs(hookspecs)
        self.records: dict[str, PluginRecord] = {}

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
            try:
                obj = ep.load()
            except BaseException as exc:  # a plugin's import may do anything, SystemExit included
                record.status = "failed"
                record.reason = f"import failed: {_short_error(exc)}"
                record.obj = traceback.format_exc()
                continue
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
            self.pm.register(plugin, name=record.id)
            registered = True
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
            record.status = "failed"
            record.reason = _short_error(exc)
            return
        record.status = "loaded"
        record.obj = plugin
        record.tools = tools
        record.fingerprint = plugin_fingerprint(
            record.distribution, record.version, (t.descriptor(record.id) for t in tools)
        )

    # -- calling hooks ------------------------------------------------------------------

    def _call_one(self, plugin_id: str, hook: str, **kwargs: Any) -> Any:
        for impl in getattr(self.pm.hook, hook).get_hookimpls():
            if impl.plugin_name == plugin_id:
                return impl.function(**{k: kwargs[k] for k in impl.argnames})
        return None

    def call_each(self, hook: str, **kwargs: Any) -> Iterable[tuple[str, Callable[[], Any]]]:
        """`(plugin_id, thunk)` for every loaded plugin implementing `hook`, in pluggy order.

        The caller runs each thunk (and awaits what it returns) so one plugin's failure or
        slowness is handled per plugin.
        """
        for impl in reversed(getattr(self.pm.hook, hook).get_hookimpls()):
            args: dict[str, Any] = {k: kwargs[k] for k in impl.argnames}
            yield impl.plugin_name, functools.partial(impl.function, **args)

    def fingerprint_of(self, plugin_id: str) -> str | None:
        record = self.records.get(plugin_id)
        return record.fingerprint if record is not None else None

    def mark_failed(self, plugin_id: str, reason: str) -> None:
        record = self.records.get(plugin_id)
        if record is not None:
            record.status = "failed"
            record.reason = reason
