"""The whole plugin contract: these hooks, implemented with `@hookimpl`.

A plugin is a module or a class named by an entry point in the group `meith.plugins`; the
entry-point name is the plugin id. A class is instantiated once per runtime, which is where a
plugin keeps per-runtime state (managed processes, a browser). Lifecycle hooks may be
`async def`; the runtime awaits them, and they receive a `PluginHost` bound to the plugin,
never the runtime itself.

meith calls each implementation on its own, so one plugin's failure or slowness stays its
own: `tryfirst=True` / `trylast=True` order the calls, and `meith_approve` stops at the first
answer (`firstresult`). Hook wrappers (`hookwrapper=True`, `wrapper=True`) and names that are
not hooks below make a plugin fail to load with a message saying so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from pydantic import BaseModel

    from meith_core.call.tooldef import ToolDefinition
    from meith_core.host.plugins.pluginhost import PluginHost
    from meith_core.host.settings import SettingsSection
    from meith_core.protocol.call_approval import ApprovalAnswer, ApprovalRequest

PROJECT_NAME = "meith"
ENTRY_POINT_GROUP = "meith.plugins"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def meith_tools() -> list[ToolDefinition]:  # type: ignore[empty-body]
    """Return this plugin's tool definitions (built with `@tool`).

    Called once when the plugin loads. Raising here marks the plugin failed with the reason
    (a plugin can refuse to load, e.g. when a required program is missing or too old); the
    other plugins still load. Tool names are global: a name another plugin registered first
    makes this plugin fail to load.
    """


@hookspec
def meith_settings() -> dict[str, type[BaseModel] | SettingsSection]:  # type: ignore[empty-body]
    """Return `{section: Model}` for the sections of settings.json this plugin owns.

    `set_app_settings` validates those sections with the models; tools read them through
    `ctx.settings[section]`. A section whose keys loosen the plugin's own checks returns
    `SettingsSection(Model, policy={"key", ...})` instead: those keys are then changed only by
    the local user (`meith settings set`), never through the socket.
    """


@hookspec
def meith_startup(host: PluginHost) -> Any:
    """Called once after all plugins loaded, before the runtime accepts calls. May be async.

    A plugin loaded into a runtime that already started gets it when it loads. `host.home`,
    `host.socket_path` (None in-process) and `host.cwd` are available. A failure is logged
    and marks the plugin failed; its tools stay registered but the failure is visible in
    `meith plugins` and `app_health`.
    """


@hookspec
def meith_shutdown(host: PluginHost) -> Any:
    """Called once when the runtime stops, after in-flight calls were cancelled. May be async.

    Release what the plugin holds here: stop processes, close the browser. Every plugin's
    shutdown hook runs at the same time under one deadline, `host.shutdown_deadline`
    (`host.remaining_s()` seconds from now); an async hook still running then is cancelled.
    """


@hookspec
def meith_session_ended(host: PluginHost, session_id: str) -> Any:
    """A caller session ended (its client said so, its connection closed and it was not
    resumed in time, or it was revoked). May be async.

    Release anything held on behalf of that session (e.g. browser tab claims), and stop what
    an agent session started unless it was detached to the local user (`detach: true`).
    """


@hookspec
def meith_session_objects(session_id: str) -> list[dict[str, Any]] | None:
    """What this plugin holds for a live session, for `meith sessions`. Synchronous and quick.

    Each item is `{"kind", "id", "detached", "summary"?}`: e.g. a dev server, a terminal, a
    claimed tab. `detached` says whether it outlives the session (handed to the local user).
    """


@hookspec
def meith_health() -> list[dict[str, Any]] | None:
    """Return this plugin's health checks, shown by `app_health` and `meith plugins`.

    Each check is `{"name", "status", "message", "details"?}` with status `ok`, `warn`
    (advice: the runtime works, but the user should change something), `degraded` or
    `error`. Synchronous and quick (a few subprocesses at most): it runs on every
    `app_health` call and `meith plugins` listing. A failure becomes an `error` check.
    """


@hookspec(firstresult=True)
def meith_approve(request: ApprovalRequest) -> ApprovalAnswer | None:
    """Decide a privileged call from a `cli` or `agent` session that no grant covers.

    Return `ApprovalAnswer.ALLOW_ONCE`, `ALLOW_SESSION` (remembered for this tool for the rest
    of the session) or `DENY`; return None to leave the decision to the next approver (none
    left means deny). May be async, e.g. to wait for a person at a prompt. The first answer
    that is not None wins.
    """
