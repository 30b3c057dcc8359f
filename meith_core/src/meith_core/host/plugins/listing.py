"""The plugin listing shared by `meith plugins --json` and the `list_plugins` tool, and the
health checks plugins contribute (`meith_health`) to it and to `app_health`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

from meith_core.host.plugins.manager import PluginManager, PluginRecord
from meith_core.policy.plugin_approvals import PluginApprovals
from meith_core.policy.service import HOST_PROVIDERS

if TYPE_CHECKING:
    from meith_core.base.home import MeithHome
    from meith_core.host.runtime import Runtime

HEALTH_STATUSES: Final = ("ok", "warn", "degraded", "error")


def loaded_runtime(home: MeithHome | None = None) -> Runtime:
    """A runtime on `home` (default: `MEITH_HOME`'s) with its plugins loaded (their tools and
    settings sections), not started: what `meith plugins`, `meith settings` and `meith
    doctor` read when no runtime runs. Plugin failures are in its listing, not logged."""
    import logging
    import sys

    import structlog

    from meith_core.base.home import MeithHome
    from meith_core.host.runtime import Runtime

    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
    )
    runtime = Runtime((home or MeithHome.from_env()).ensure())
    runtime.discover_plugins()
    return runtime


def runtime_listing(runtime: Runtime) -> list[dict[str, Any]]:
    """`describe_plugins` of a runtime's own plugins, approvals and health."""
    return describe_plugins(
        runtime.plugins.records.values(),
        runtime.permissions.plugin_approvals,
        plugin_health(runtime.plugins),
    )


def plugin_health(manager: PluginManager) -> dict[str, list[dict[str, Any]]]:
    """`{plugin id: checks}` from every loaded plugin's `meith_health`; a plugin whose hook
    fails or answers nonsense gets one `error` check saying so (the others are unaffected)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for plugin_id, thunk in manager.call_each("meith_health"):
        try:
            checks = [_check(item) for item in (thunk() or [])]
        except Exception as exc:
            checks = [
                {
                    "name": "health",
                    "status": "error",
                    "message": f"meith_health failed: {type(exc).__name__}: {exc}"[:500],
                }
            ]
        out.setdefault(plugin_id, []).extend(checks)
    return out


def _check(item: Any) -> dict[str, Any]:
    if not isinstance(item, Mapping):
        raise TypeError(f"a health check must be a dict, got {type(item).__name__}")
    status = item.get("status")
    if status not in HEALTH_STATUSES:
        raise ValueError(f"health check status must be one of {HEALTH_STATUSES}, got {status!r}")
    check = {
        "name": str(item.get("name") or "health"),
        "status": status,
        "message": str(item.get("message") or ""),
    }
    details = item.get("details")
    if isinstance(details, Mapping):
        check["details"] = dict(details)
    return check


def describe_plugins(
    records: Iterable[PluginRecord],
    plugin_approvals: PluginApprovals,
    health: Mapping[str, list[dict[str, Any]]] | None = None,
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for record in records:
        entry = record.summary()
        entry["health"] = list((health or {}).get(record.id, ()))
        requested = entry["requestedCapabilities"]
        plugin_approval = plugin_approvals.get(record.id)
        if record.id in HOST_PROVIDERS:
            entry["approval"] = {"capabilities": requested, "implicit": True, "valid": True}
        elif plugin_approval is not None:
            entry["approval"] = {
                "capabilities": [c.value for c in plugin_approval.capabilities],
                "approvedAt": plugin_approval.approved_at,
                "implicit": False,
                # void when the plugin changed (version or tools) since it was approved
                "valid": plugin_approval.fingerprint == record.fingerprint,
                # what it was given for, and what changed since (empty while it is valid)
                "distribution": plugin_approval.distribution,
                "version": plugin_approval.version,
                "fingerprint": plugin_approval.fingerprint,
                "changes": plugin_approval.changes(
                    record.fingerprint, record.version, entry["tools"]
                ),
            }
        else:
            entry["approval"] = None
        out.append(entry)
    return out
