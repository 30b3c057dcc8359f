"""The peer: the official MCP Python SDK serving the same trivial tool over stdio.

Written the way the SDK's documentation shows (mcp 2.x `MCPServer`, mcp 1.x `FastMCP`).
"""

from __future__ import annotations

from typing import Any

try:
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server  # type: ignore[no-redef,attr-defined,unused-ignore]

server = Server("bench")


@server.tool()
async def bench_echo(text: str = "") -> dict[str, Any]:
    """Return the input unchanged (benchmark tool)."""
    return {"text": text}


if __name__ == "__main__":
    server.run()
