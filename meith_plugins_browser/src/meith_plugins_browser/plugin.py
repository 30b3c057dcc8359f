"""The `browser` plugin (entry point `browser` in `meith.plugins`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from meith_core import PluginHost, SettingsSection, ToolDefinition, hookimpl
from meith_plugins_browser.browser import BrowserHost
from meith_plugins_browser.claims import end_session
from meith_plugins_browser.executable import health_check
from meith_plugins_browser.page_tools import PageTools
from meith_plugins_browser.settings import SECTION, BrowserSettings
from meith_plugins_browser.tab_tools import TabTools

#: The meith plugin API this plugin is built for.
MEITH_PLUGIN_API = ">=1,<2"


class Plugin:
    """One per runtime: owns that runtime's browser (started by the first call that needs it)."""

    def __init__(self) -> None:
        self.host = BrowserHost()
        self.tools = (TabTools(self.host), PageTools(self.host))

    @hookimpl
    def meith_tools(self) -> list[ToolDefinition]:
        return [d for tools in self.tools for d in tools.definitions()]

    @hookimpl
    def meith_settings(self) -> dict[str, type[BaseModel] | SettingsSection]:
        # Each loosens the plugin's own checks (more URL schemes, unrestricted CDP, Chromium
        # without its sandbox for every session): only the local user changes them.
        return {
            SECTION: SettingsSection(
                BrowserSettings, policy={"extraSchemes", "cdpUnrestricted", "sandbox"}
            )
        }

    @hookimpl
    def meith_health(self) -> list[dict[str, Any]]:
        return [health_check()]

    @hookimpl
    async def meith_session_ended(self, host: PluginHost, session_id: str) -> None:
        await end_session(self.host, session_id)

    @hookimpl
    def meith_session_objects(self, session_id: str) -> list[dict[str, Any]]:
        return [
            {
                "kind": "tab",
                "id": tab.id,
                "detached": tab.detached,
                # Not its URL: every socket peer may list sessions, and URLs carry tokens.
                "summary": "opened" if tab.opened_by == session_id else "claimed",
            }
            for tab in self.host.tabs
            if tab.owner_id == session_id
        ]

    @hookimpl
    async def meith_shutdown(self, host: PluginHost) -> None:
        await self.host.close()
