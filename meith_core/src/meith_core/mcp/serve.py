"""Running the bridge: over stdio (the MCP stream owns stdout) or over streamable HTTP."""

from __future__ import annotations

import socket

import anyio

from meith_core.base.port_registry import record_port
from meith_core.mcp.bridge import Bridge
from meith_core.mcp.events import RETRY_MS, BoundedEventStore, ResumableStreams
from meith_core.mcp.http import MCP_PATH, HttpFront, security_settings
from meith_core.mcp.sessions import NAMED_IDLE_S, BridgeConfig, log
from meith_core.mcp.stdio import stdio_streams


async def run_stdio(config: BridgeConfig) -> None:
    bridge = Bridge(config)
    try:
        async with anyio.create_task_group() as tg:
            bridge.task_group = tg
            # fd 1 points at stderr while the transport serves: stray prints in this
            # process cannot reach the MCP stream.
            async with stdio_streams() as (read, write):
                await bridge.server.run(read, write, bridge.init_options())
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await bridge.aclose()


async def run_http(
    config: BridgeConfig, host: str, port: int, token: str, origins: tuple[str, ...] = ()
) -> None:
    import uvicorn

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound = int(sock.getsockname()[1])  # port 0 asks for any free port
    # Never opened on the host for a confined process (it would take the bearer token);
    # noted before anyone can connect.
    record_port(bound, f"meith mcp --http {port or bound}", configured=port != 0)
    sock.listen(128)
    bridge = Bridge(config)
    security = security_settings(host, bound, origins)
    store = BoundedEventStore()
    app = bridge.server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        transport_security=security,
        host=host,
        session_idle_timeout=NAMED_IDLE_S,
        event_store=store,
        retry_interval=RETRY_MS,
    )
    front = HttpFront(ResumableStreams(app, store), token, security)
    shown = f"[{host}]" if ":" in host else host
    server = uvicorn.Server(
        uvicorn.Config(front, log_level="warning", lifespan="on", access_log=False)
    )
    log(f"listening on http://{shown}:{bound}/mcp")
    try:
        async with anyio.create_task_group() as tg:
            bridge.task_group = tg
            tg.start_soon(bridge.sessions.expire_idle_forever)
            await server.serve(sockets=[sock])
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await bridge.aclose()
        sock.close()
