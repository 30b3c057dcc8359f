"""The catalogue: which tools exist, and which plugin registered each.

Registration is all-or-nothing per batch and a name belongs to the first plugin that took it.
Running a tool is not this module's business (see `call/pipeline.py`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from meith_core.call.tooldef import ToolDefinition


class DuplicateToolError(ValueError):
    """A tool name that another plugin registered first."""


@dataclass(frozen=True, slots=True)
class RegisteredTool:
    definition: ToolDefinition
    plugin_id: str


class Catalogue:
    """Tools by name, in registration order."""

    def __init__(self) -> None:
        self._tools: dict[str, RegisteredTool] = {}
        self._described: list[dict[str, Any]] | None = None

    def register_many(self, tools: Iterable[ToolDefinition], plugin_id: str) -> None:
        """Register all of `tools` or none of them."""
        batch = list(tools)
        seen: set[str] = set()
        for tool in batch:
            if not isinstance(tool, ToolDefinition):
                raise TypeError(f"expected a ToolDefinition, got {type(tool).__name__}")
            existing = self._tools.get(tool.name)
            if existing is not None:
                raise DuplicateToolError(
                    f"tool {tool.name!r} is already registered by plugin {existing.plugin_id!r}"
                )
            if tool.name in seen:
                raise DuplicateToolError(f"tool {tool.name!r} is declared twice")
            seen.add(tool.name)
            tool.input_schema  # noqa: B018 - fail at registration, not at the first call
            tool.output_schema  # noqa: B018
        for tool in batch:
            self._tools[tool.name] = RegisteredTool(tool, plugin_id)
        self._described = None

    def get(self, name: str) -> RegisteredTool | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def describe(self) -> list[dict[str, Any]]:
        """Tool descriptors in registration order (cached until the next registration)."""
        if self._described is None:
            self._described = [t.definition.descriptor(t.plugin_id) for t in self._tools.values()]
        return self._described
