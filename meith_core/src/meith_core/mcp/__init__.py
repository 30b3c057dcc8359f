"""`meith mcp`: the runtime's tools for MCP clients, through the runtime's own gates and audit.

The bridge is a client of the runtime like the CLI: each MCP session holds one socket
connection (`link`), which is one runtime session of caller kind `agent`. The modules:
`link` (the socket side), `sessions` (which link serves a request), `tools` (descriptors to MCP tools), `content` (results to MCP
content), `approval` (approval requests to elicitations), `bridge` (the MCP server),
`http` (streamable HTTP, token, no OAuth), `events` (resumable SSE
streams), `autostart` (a runtime when none runs).
"""
