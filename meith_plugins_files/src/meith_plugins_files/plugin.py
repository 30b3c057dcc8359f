"""The `files` plugin (entry point `files` in `meith.plugins`)."""

from __future__ import annotations

import threading
from typing import Any

from meith_core import ErrorCode, PluginHost, ToolContext, ToolDefinition, ToolError, hookimpl
from meith_plugins_files import ripgrep
from meith_plugins_files.locks import FileLocks
from meith_plugins_files.tools import build_tools
from meith_plugins_files.undo import UndoStore

#: The meith plugin API this plugin is built for.
MEITH_PLUGIN_API = ">=1,<2"
#: Under `$MEITH_HOME/state/`: this plugin's private directory.
STATE_DIR = "files"


class Plugin:
    """The workspace file tools; one instance per runtime (its file locks and undo store)."""

    def __init__(self) -> None:
        self.locks = FileLocks()
        self._undo: UndoStore | None = None
        self._guard = threading.Lock()
        self._rg: str | None = ripgrep.locate()

    @hookimpl
    def meith_tools(self) -> list[ToolDefinition]:
        return build_tools(self)

    @hookimpl
    def meith_startup(self, host: PluginHost) -> None:
        self._undo = UndoStore(host.home.state_dir / STATE_DIR / "undo")

    @hookimpl
    def meith_health(self) -> list[dict[str, Any]]:
        if self._rg is None:
            return [
                {
                    "name": "ripgrep",
                    "status": "degraded",
                    "message": "no rg found: workspace_search and workspace_list_files fail "
                    "(pip install 'ripgrep>=14.1,<14.2' into meith's environment, or put rg on "
                    "PATH)",
                }
            ]
        return [{"name": "ripgrep", "status": "ok", "message": self._rg}]

    def store(self, ctx: ToolContext) -> UndoStore:
        with self._guard:
            if self._undo is None:
                self._undo = UndoStore(ctx.home.state_dir / STATE_DIR / "undo")
            return self._undo

    def rg(self) -> str:
        if self._rg is None:
            self._rg = ripgrep.locate()
        if self._rg is None:
            raise ToolError(
                ErrorCode.TOOL_FAILED,
                "ripgrep is not installed: install the ripgrep package (pip install "
                "'ripgrep>=14.1,<14.2') into meith's environment, or put rg on PATH",
                {"reason": "no ripgrep"},
            )
        return self._rg
