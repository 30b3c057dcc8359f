"""The `git` plugin (entry point `git` in `meith.plugins`)."""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from pydantic import BaseModel

from meith_core import PluginHost, ToolDefinition, hookimpl, landlock_status
from meith_plugins_git.health import bare_repository_check
from meith_plugins_git.identity import SETTINGS_SECTION, GitSettings
from meith_plugins_git.runner import Git
from meith_plugins_git.tools import GitTools

#: The meith plugin API this plugin is built for.
MEITH_PLUGIN_API = ">=1,<2"


class Plugin:
    """One instance per runtime: the resolved git and the per-repository write locks."""

    def __init__(self) -> None:
        self.tools: GitTools | None = None

    @hookimpl
    def meith_tools(self) -> list[ToolDefinition]:
        # Raises GitUnavailable when git is missing or older than 2.24: the plugin is then
        # reported failed with the reason instead of running git unhardened.
        self.tools = GitTools(Git.locate())
        return self.tools.definitions()

    @hookimpl
    def meith_settings(self) -> dict[str, type[BaseModel]]:
        return {SETTINGS_SECTION: GitSettings}

    @hookimpl
    async def meith_startup(self, host: PluginHost) -> None:
        if self.tools is not None and host.socket_path:
            # Hooks run confined must not reach the runtime (its socket may lie outside home).
            self.tools.git.hidden_paths = (host.socket_path,)
        if self.tools is not None:
            self.tools.git.report_planted = host.report_planted_git
        # Probing namespace support spawns a process: now, off the event loop, rather than
        # in the first commit that runs hooks.
        await anyio.to_thread.run_sync(landlock_status)

    @hookimpl
    def meith_health(self) -> list[dict[str, Any]]:
        if self.tools is None:
            return []
        return [bare_repository_check(self.tools.git)]
