"""The `core` plugin: runtime health, instances, plugins, settings and the audit trail.

It ships inside meith_core and is approved implicitly (it is part of the host), but its tools
go through the same pipeline as every other tool.
"""

from __future__ import annotations

import importlib.metadata
import os
import time
from typing import Any, Literal

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field

from meith_core._version import __version__
from meith_core.base.instances import live_instances
from meith_core.call.context import ToolContext
from meith_core.call.tooldef import ToolDefinition, tool
from meith_core.confine.status import landlock_status
from meith_core.host.plugins.hookspecs import hookimpl
from meith_core.host.plugins.listing import describe_plugins, plugin_health
from meith_core.host.runtime import Runtime
from meith_core.host.settings import PolicySettingError, SettingsError
from meith_core.protocol.constants import PROTOCOL_VERSION
from meith_core.protocol.errors import ErrorCode, ToolError


class _NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SetSettingsArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    settings: dict[str, Any] = Field(
        description="Top-level keys to replace (shallow merge); a key set to null is removed"
    )


class AuditLogArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    limit: int = Field(default=50, ge=1, le=1000, description="Newest entries to return")
    toolName: str | None = Field(default=None, description="Only calls of this tool")
    caller: str | None = Field(
        default=None, description="Only this caller kind (cli, agent, plugin, ...)"
    )
    decision: Literal["allow", "deny"] | None = Field(
        default=None, description="Only calls with this decision"
    )
    sessionId: str | None = Field(default=None, description="Only calls of this session")
    since: int | None = Field(
        default=None, description="Only entries at or after this epoch-ms timestamp"
    )


class CorePlugin:
    # Part of the host, so it is handed the Runtime itself; other plugins get a PluginHost.
    def __init__(self, runtime: Runtime | None = None) -> None:
        self.runtime = runtime
        self.started = time.time()

    def _rt(self) -> Runtime:
        if self.runtime is None:
            raise ToolError(ErrorCode.TOOL_FAILED, "the core plugin is not attached to a runtime")
        return self.runtime

    @hookimpl
    def meith_tools(self) -> list[ToolDefinition]:
        return [
            tool(
                self.app_health,
                effect="reads",
                capabilities=["read-only"],
                idempotent=True,
                input=_NoArgs,
                acts_on="global:runtime",
            ),
            tool(
                self.app_list_instances,
                effect="reads",
                capabilities=["read-only"],
                idempotent=True,
                input=_NoArgs,
                acts_on="global:runtime",
            ),
            tool(
                self.list_plugins,
                effect="reads",
                capabilities=["read-only"],
                idempotent=True,
                input=_NoArgs,
                acts_on="global:plugins",
            ),
            tool(
                self.reload_plugins,
                effect="reloads",
                capabilities=["read-only"],
                input=_NoArgs,
                acts_on="global:plugins",
            ),
            tool(
                self.get_app_settings,
                effect="reads",
                capabilities=["read-only"],
                idempotent=True,
                input=_NoArgs,
                acts_on="global:settings",
            ),
            # Settings every session reads (the commit identity, the browser's options): a
            # grant confined to a directory never covers writing them.
            tool(
                self.set_app_settings,
                effect="updates",
                capabilities=["writes-files"],
                input=SetSettingsArgs,
                acts_on="global:settings",
            ),
            tool(
                self.get_audit_log,
                effect="reads",
                capabilities=["read-only"],
                idempotent=True,
                input=AuditLogArgs,
                acts_on="global:runtime",
            ),
        ]

    async def app_health(self, ctx: ToolContext, args: _NoArgs) -> dict[str, Any]:
        """Health of the runtime: socket, plugins, the audit writer, confinement, and the
        checks plugins add (status `warn`: advice that leaves the overall status ok)."""
        rt = self._rt()
        checks: list[dict[str, Any]] = []
        server = rt.server
        if server is not None:
            st = server.status()
            checks.append(
                {"name": "socket", "status": "ok" if st["listening"] else "error", "details": st}
            )
        else:
            checks.append({"name": "socket", "status": "ok", "details": {"inProcess": True}})
        failed = {r.id: r.reason for r in rt.plugins.records.values() if r.status == "failed"}
        loaded = [r.id for r in rt.plugins.records.values() if r.status == "loaded"]
        checks.append(
            {
                "name": "plugins",
                "status": "degraded" if failed else "ok",
                "details": {"loaded": loaded, "failed": failed, "tools": len(rt.catalogue)},
            }
        )
        audit = rt.audit.status()
        problem = rt.audit.preflight()
        checks.append(
            {
                "name": "audit",
                "status": "ok" if problem is None and audit["ok"] else "error",
                "details": {**audit, "problem": problem},
            }
        )
        usage = await anyio.to_thread.run_sync(rt.audit.usage)
        capacity = _audit_capacity(usage)
        if capacity is not None:
            checks.append(capacity)
        landlock = landlock_status()
        checks.append(
            {
                # Whether a directory-confined grant confines what processes do, or only
                # where they start.
                "name": "confinement",
                "status": "ok" if landlock.available and not landlock.missing() else "degraded",
                "details": landlock.to_dict(),
            }
        )
        # Git metadata confined processes planted, and what was neutralised in it.
        checks.append(rt.planted.check())
        # Plugins' own checks (`meith_health`); `warn` is advice and leaves the status ok.
        contributed = await anyio.to_thread.run_sync(plugin_health, rt.plugins)
        for plugin_id, plugin_checks in contributed.items():
            for check in plugin_checks:
                checks.append({**check, "name": f"{plugin_id}.{check['name']}"})
        worst = "ok"
        for check in checks:
            if check["status"] == "error":
                worst = "error"
            elif check["status"] == "degraded" and worst == "ok":
                worst = "degraded"
        return {
            "status": "ok" if worst == "ok" else "degraded",
            "checkedAt": time.time_ns() // 1_000_000,
            "version": __version__,
            "protocolVersion": PROTOCOL_VERSION,
            "pid": os.getpid(),
            "uptimeS": round(time.time() - self.started, 3),
            "home": str(rt.home.root),
            "checks": checks,
        }

    async def app_list_instances(self, ctx: ToolContext, args: _NoArgs) -> list[dict[str, Any]]:
        """Live meith runtimes of this MEITH_HOME, newest first."""
        return [r.to_json() for r in live_instances(self._rt().home)]

    async def list_plugins(self, ctx: ToolContext, args: _NoArgs) -> list[dict[str, Any]]:
        """Every plugin this runtime has loaded or tried to: status, tools, requested and
        approved capabilities (plugins installed since it started are loaded first)."""
        rt = self._rt()
        rt.load_new_plugins()
        await rt.wait_late_startups()
        health = await anyio.to_thread.run_sync(plugin_health, rt.plugins)
        listing = describe_plugins(
            rt.plugins.records.values(), rt.permissions.plugin_approvals, health
        )
        for entry in listing:
            # Upgraded on disk since it was loaded: this runtime runs the old code until it
            # restarts (and the approval, pinned to the version, is then void).
            installed = _installed_version(entry["distribution"])
            if installed is not None and installed != entry["version"]:
                entry["installedVersion"] = installed
        return listing

    async def reload_plugins(self, ctx: ToolContext, args: _NoArgs) -> list[dict[str, Any]]:
        """Load plugins installed since the runtime started, and retry those that failed to
        load; returns them (an upgraded or removed plugin needs a restart)."""
        rt = self._rt()
        new = rt.load_new_plugins(force=True)
        await rt.wait_late_startups()
        return describe_plugins(new, rt.permissions.plugin_approvals)

    async def get_app_settings(self, ctx: ToolContext, args: _NoArgs) -> dict[str, Any]:
        """The user settings in $MEITH_HOME/settings.json."""
        return {"settings": self._rt().settings.load()}

    async def set_app_settings(self, ctx: ToolContext, args: SetSettingsArgs) -> dict[str, Any]:
        """Shallow-merge settings into $MEITH_HOME/settings.json (sections are validated).
        Security policy settings are changed only with `meith settings set`."""
        try:
            # Only the embedding program (a trusted in-process caller) speaks for the local
            # user here; a socket caller never changes the trust root.
            merged = self._rt().settings.merge(args.settings, allow_policy=ctx.caller.trusted)
        except PolicySettingError as exc:
            raise ToolError(ErrorCode.PERMISSION_DENIED, str(exc)) from None
        except SettingsError as exc:
            raise ToolError(ErrorCode.VALIDATION_ERROR, str(exc)) from None
        return {"settings": merged}

    async def get_audit_log(self, ctx: ToolContext, args: AuditLogArgs) -> dict[str, Any]:
        """The newest audit entries, optionally filtered. An agent reads its own session's
        only, unless the user granted it every session's (the result's `note` says how)."""
        rt = self._rt()
        every = rt.permissions.sees_every_session(ctx.caller)
        own = ctx.caller.session_id

        def keep(record: dict[str, Any]) -> bool:
            return (
                (every or record.get("sessionId") == own)
                and (args.toolName is None or record.get("toolName") == args.toolName)
                and (args.caller is None or record.get("caller") == args.caller)
                and (args.decision is None or record.get("decision") == args.decision)
                and (args.sessionId is None or record.get("sessionId") == args.sessionId)
                and (args.since is None or int(record.get("ts") or 0) >= args.since)
            )

        entries = rt.audit.tail(args.limit, keep)
        if every:
            return {"entries": entries}
        return {"entries": entries, "note": rt.permissions.every_session_hint(ctx.caller)}


#: app_health warns when the trail holds more than this share of audit.maxBytes.
AUDIT_NEAR_LIMIT = 0.8


def _audit_capacity(usage: dict[str, Any]) -> dict[str, Any] | None:
    """A `warn` check when the trail is near its byte budget or retention dropped evidence."""
    dropped = int(usage.get("evidenceDropped") or 0)
    share = float(usage.get("share") or 0.0)
    if not dropped and share < AUDIT_NEAR_LIMIT:
        return None
    if dropped:
        message = (
            f"retention dropped {dropped} privileged or denied record(s) younger than "
            "audit.retentionDays; raise audit.maxBytes (meith settings set audit.maxBytes N)"
        )
    else:
        message = (
            f"the audit trail is at {share:.0%} of audit.maxBytes ({usage['maxBytes']} bytes): "
            "size-based retention is deleting old segments; raise audit.maxBytes to keep more"
        )
    return {"name": "audit.capacity", "status": "warn", "message": message, "details": usage}


def _installed_version(distribution: str | None) -> str | None:
    if not distribution:
        return None
    try:
        return importlib.metadata.version(distribution)
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None
