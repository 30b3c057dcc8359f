"""What the tests of tool definitions share: one tool declared field by field."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from meith_core import ToolContext, ToolDefinition


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = "hi"


async def echo(ctx: ToolContext, args: Args) -> str:
    """Echo the text."""
    return args.text


def defn(**overrides: Any) -> ToolDefinition:
    fields: dict[str, Any] = {
        "name": "echo",
        "description": "Echo.",
        "input_model": Args,
        "capabilities": ("read-only",),
        "func": echo,
    }
    fields.update(overrides)
    return ToolDefinition(**fields)
