"""The `files` plugin (entry point `files` in `meith.plugins`)."""

from __future__ import annotations

from typing import Any

from meith_core import PluginHost, ToolDefinition, hookimpl
from meith_plugins_files.tools import FileTools

#: The meith plugin API this plugin is built for.
MEITH_PLUGIN_API = ">=1,<2"


class Plugin:
    """The workspace file tools; one instance per runtime."""

    def __init__(self) -> None:
        self.tools = FileTools()

    @hookimpl
    def meith_tools(self) -> list[ToolDefinition]:
        return self.tools.definitions()

    @hookimpl
    def meith_startup(self, host: PluginHost) -> None:
        self.tools.open_undo(host.home.state_dir)

    @hookimpl
    def meith_health(self) -> list[dict[str, Any]]:
        if self.tools.rg_path is None:
            return [
                {
                    "name": "ripgrep",
                    "status": "degraded",
                    "message": "no rg found: workspace_search and workspace_list_files fail "
                    "(pip install 'ripgrep>=14.1,<14.2' into meith's environment, or put rg on "
                    "PATH)",
                }
            ]
        return [{"name": "ripgrep", "status": "ok", "message": self.tools.rg_path}]
