"""The baseline for bench_mcp.py: a bare low-level MCP SDK server (the API `meith mcp` is built
on) serving the same trivial tool over stdio, answering with the same content shape
(structuredContent plus its text)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

TOOL = types.Tool(
    name="bench_echo",
    description="Return the input unchanged (benchmark tool).",
    input_schema={
        "type": "object",
        "properties": {"text": {"type": "string", "default": ""}},
        "additionalProperties": False,
    },
    annotations=types.ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=False, open_world_hint=False
    ),
)


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[TOOL])


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    # What `meith mcp` answers for a tool without a rendering: its content as compact JSON
    # text, no structured content (that comes only with --structured).
    content = {"text": str((params.arguments or {}).get("text", ""))}
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(content, separators=(",", ":")))]
    )


async def main() -> None:
    server = Server("bench-bare", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
