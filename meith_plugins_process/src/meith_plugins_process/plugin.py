"""The `process` plugin (entry point `process` in `meith.plugins`)."""

from __future__ import annotations

from meith_core import ToolDefinition, hookimpl


class Plugin:
    @hookimpl
    def meith_tools(self) -> list[ToolDefinition]:
        return []
