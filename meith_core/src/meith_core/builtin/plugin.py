"""The `core` plugin. Its tools arrive with `meith serve` (runtime health, settings, audit)."""

from __future__ import annotations

from meith_core.plugins.hookspecs import hookimpl
from meith_core.tooldef import ToolDefinition


class CorePlugin:
    @hookimpl
    def meith_tools(self) -> list[ToolDefinition]:
        return []
