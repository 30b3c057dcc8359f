"""The tools that watch what runs: process trees, buffered and live logs, and waiting for a
dev server to be ready."""

from __future__ import annotations

import asyncio
from typing import Any, Final

import anyio.to_thread

from meith_core import (
    NO_TIMEOUT,
    ActsOn,
    ErrorCode,
    ToolContext,
    ToolDefinition,
    ToolError,
    compile_pattern,
    tool,
)
from meith_plugins_process.attach import LogForwarder
from meith_plugins_process.devservers import DevServer, DevServerManager, resolve_cwd
from meith_plugins_process.logbuffer import Entry, entry_dict
from meith_plugins_process.models import (
    AttachLogsArgs,
    EmptyArgs,
    ProcessLogsArgs,
    WaitForDevServerArgs,
)
from meith_plugins_process.outputs import (
    AttachResult,
    DevServerRecord,
    ProcessLogsResult,
    ProcessTreeResult,
)
from meith_plugins_process.readiness import http_status, port_accepts
from meith_plugins_process.terminals import Terminal, TerminalManager
from meith_plugins_process.tree import process_tree, tree_ports

#: wait_for_dev_server: how often conditions are re-checked, and progress is reported.
_WAIT_POLL_S: Final = 0.2
_WAIT_PROGRESS_S: Final = 1.0
#: The tool's own deadline is the call's `timeoutMs` (at most 10 min); this only backstops it.
_WAIT_TOOL_TIMEOUT_MS: Final = 610_000
_TAIL_ON_FAILURE: Final = 20


class WatchTools:
    """The runtime's dev servers and terminals, and the read-only tools that watch them."""

    def __init__(self, dev_servers: DevServerManager, terminals: TerminalManager) -> None:
        self.dev_servers = dev_servers
        self.terminals = terminals

    def definitions(self) -> list[ToolDefinition]:
        # Each acts on the directory its dev server or terminal was started in, whoever calls
        # (docs/plugin-guide.md, "What a tool acts on"); attaching by `cwd` on that directory;
        # the tree on the runtime's state.
        return [
            tool(
                self.get_process_tree,
                effect="reads",
                capabilities=["read-only"],
                idempotent=True,
                output=ProcessTreeResult,
                acts_on="global:runtime",
            ),
            tool(
                self.get_process_logs,
                effect="reads",
                capabilities=["read-only"],
                idempotent=True,
                output=ProcessLogsResult,
                acts_on=ActsOn.object(self._process_directory, what="process"),
            ),
            tool(
                self.attach_process_logs,
                effect="reads",
                capabilities=["read-only"],
                output=AttachResult,
                timeout_ms=NO_TIMEOUT,
                acts_on=ActsOn.object(self._attached_directory, what="dev server"),
            ),
            tool(
                self.wait_for_dev_server,
                effect="reads",
                capabilities=["read-only", "accesses-network"],
                output=DevServerRecord,
                timeout_ms=_WAIT_TOOL_TIMEOUT_MS,
                acts_on=ActsOn.object(self._server_directory, what="dev server"),
            ),
        ]

    def _process_directory(self, args: ProcessLogsArgs) -> str | None:
        return self.dev_servers.directory_of(args.processId) or self.terminals.directory_of(
            args.processId
        )

    def _server_directory(self, args: WaitForDevServerArgs) -> str | None:
        return self.dev_servers.directory_of(args.devServerId)

    def _attached_directory(self, args: AttachLogsArgs) -> str | None:
        if args.devServerId:
            return self.dev_servers.directory_of(args.devServerId)
        return args.cwd

    async def get_process_tree(self, ctx: ToolContext, args: EmptyArgs) -> dict[str, Any]:
        """Every managed dev server and terminal with its process tree and listening ports."""
        items: list[tuple[str, str, int | None, float | None, str, str | None, str, int | None]]
        items = [
            ("dev-server", s.id, s.pid, s.create_time, s.cwd, s.display_command, s.status, s.port)
            for s in self.dev_servers.visible(ctx.caller)
        ]
        items.extend(
            ("terminal", t.id, t.pid, t.create_time, t.cwd, t.shell, t.status, None)
            for t in self.terminals.visible(ctx.caller)
        )

        def read_trees() -> list[dict[str, Any] | None]:
            return [process_tree(pid, created) for _k, _i, pid, created, *_rest in items]

        trees = await anyio.to_thread.run_sync(read_trees)
        processes = []
        for (kind, pid_id, pid, _created, cwd, command, status, port), tree in zip(
            items, trees, strict=True
        ):
            ports = set(tree_ports(tree))
            if port is not None:
                ports.add(port)
            server = self.dev_servers.by_id.get(pid_id)
            if server is not None and server.port is None and server.active and ports:
                server.port = min(ports)
            processes.append(
                {
                    "kind": kind,
                    "id": pid_id,
                    "pid": pid,
                    "cwd": cwd,
                    "command": command,
                    "status": status,
                    "ports": sorted(ports),
                    "tree": tree,
                }
            )
        return {"processes": processes}

    async def get_process_logs(self, ctx: ToolContext, args: ProcessLogsArgs) -> dict[str, Any]:
        """Buffered log entries of a dev server (lines) or terminal (raw chunks), oldest first."""
        found: DevServer | Terminal
        if args.processId in self.dev_servers.by_id:
            found = self.dev_servers.get(args.processId, ctx.caller)
        elif args.processId in self.terminals.by_id:
            found = self.terminals.get(args.processId, ctx.caller)
        else:
            raise ToolError(ErrorCode.TOOL_FAILED, f"Unknown process: {args.processId}")
        entries = found.logs.since(args.sinceSeq or 0, args.limit)
        return {"processId": args.processId, "logs": [entry_dict(e) for e in entries]}

    async def attach_process_logs(self, ctx: ToolContext, args: AttachLogsArgs) -> dict[str, Any]:
        """Stream a dev server's log lines as `log` events (buffered ones first when `replay`)
        until the call is cancelled; used by `meith devlogs`."""
        if args.devServerId:
            server = self.dev_servers.get(args.devServerId, ctx.caller)
        else:
            cwd = resolve_cwd(args.cwd or ctx.cwd, ctx.cwd)
            found = self.dev_servers.newest_in(cwd, ctx.caller)
            if found is None:
                raise ToolError(ErrorCode.TOOL_FAILED, f"No dev server running in {cwd}")
            server = found
        forwarder = LogForwarder(ctx, server)
        # Replay and subscribe with no await in between: no line is missed or sent twice.
        if args.replay:
            forwarder.replay(server.logs.since(0))
        unsubscribe = server.logs.subscribe(forwarder)
        drain = asyncio.ensure_future(forwarder.run())
        try:
            await ctx.wait_cancelled()
        finally:
            unsubscribe()
            drain.cancel()
            forwarder.release()
        return {"devServerId": server.id, "attached": True}

    async def wait_for_dev_server(
        self, ctx: ToolContext, args: WaitForDevServerArgs
    ) -> dict[str, Any]:
        """Wait until a dev server is ready: its port accepts connections (the default), a log
        line matches `logPattern`, and/or `url` answers below 500. Fails when the server exits
        first or `timeoutMs` passes."""
        server = self.dev_servers.get(args.devServerId, ctx.caller)
        return await self._wait_ready(ctx, server, args)

    async def _wait_ready(
        self, ctx: ToolContext, server: DevServer, args: WaitForDevServerArgs
    ) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + args.timeoutMs / 1000
        # A caller's pattern runs on RE2 (linear time) on the event loop: it cannot stall others.
        pattern = compile_pattern(args.logPattern) if args.logPattern else None
        wants_port = args.port is not None or (pattern is None and args.url is None)
        port_ok, url_ok = not wants_port, args.url is None
        matched = asyncio.Event()
        unsubscribe = None
        if pattern is not None:
            if any(pattern.search(text) for text in server.logs.texts()):
                matched.set()
            else:

                def watch(batch: list[Entry]) -> None:
                    if any(pattern.search(e[2]) for e in batch):
                        matched.set()

                unsubscribe = server.logs.subscribe(watch)
        reported: set[str] = set()
        last_progress = started

        def waiting_for() -> str:
            parts = []
            if not port_ok:
                port = args.port or server.port
                parts.append(
                    f"port {port} to accept connections" if port else "a port to be detected"
                )
            if pattern is not None and not matched.is_set():
                parts.append(f"a log line matching /{pattern.pattern}/")
            if not url_ok:
                parts.append(f"{args.url} to answer below 500")
            return " and ".join(parts)

        def failure_details() -> dict[str, Any]:
            return {
                "devServer": server.record(),
                "logs": [entry_dict(e) for e in server.logs.tail(_TAIL_ON_FAILURE)],
            }

        try:
            ctx.progress(f"waiting for {waiting_for()}")
            while True:
                if not port_ok:
                    port = args.port or server.port
                    if port is None:
                        await self.dev_servers.refresh_port(server)
                        port = server.port
                        if port is not None:
                            ctx.progress(f"port {port} detected")
                    if port is not None:
                        why = server.forward(port)
                        if why is not None:
                            raise ToolError(
                                ErrorCode.TOOL_FAILED,
                                f"Dev server {server.id} runs in a network namespace of its own "
                                f"and port {port} cannot be opened on the host: {why}",
                                failure_details(),
                            )
                    if port is not None and await port_accepts(port):
                        port_ok = True
                        ctx.progress(f"port {port} accepts connections")
                if not url_ok and args.url is not None:
                    status = await http_status(args.url)
                    if status is not None and status < 500:
                        url_ok = True
                        ctx.progress(f"{args.url} answered {status}")
                if matched.is_set() and "log" not in reported:
                    reported.add("log")
                    ctx.progress("log line matched")
                if port_ok and url_ok and (pattern is None or matched.is_set()):
                    ctx.progress("ready", 1.0)
                    return server.record()
                if not server.active:
                    how = {"stopped": "was stopped", "errored": "failed"}.get(
                        server.status, "exited"
                    )
                    code = (
                        f" (exit code {server.exit_code})" if server.exit_code is not None else ""
                    )
                    raise ToolError(
                        ErrorCode.TOOL_FAILED,
                        f"Dev server {server.id} {how}{code} before it was ready; "
                        f"it never showed {waiting_for()}",
                        failure_details(),
                    )
                now = loop.time()
                if now >= deadline:
                    raise ToolError(
                        ErrorCode.TIMEOUT,
                        f"Dev server {server.id} was not ready after {args.timeoutMs} ms: "
                        f"still waiting for {waiting_for()}",
                        failure_details(),
                    )
                if now - last_progress >= _WAIT_PROGRESS_S:
                    last_progress = now
                    ctx.progress(f"waiting for {waiting_for()} ({now - started:.0f} s)")
                await _wait_any((matched, server.exited), min(_WAIT_POLL_S, deadline - now))
        finally:
            if unsubscribe is not None:
                unsubscribe()


async def _wait_any(events: tuple[asyncio.Event, ...], delay_s: float) -> None:
    """Sleep up to `delay_s`, waking early when one of the events not yet set gets set."""
    waiters = [asyncio.ensure_future(e.wait()) for e in events if not e.is_set()]
    try:
        if waiters:
            await asyncio.wait(
                waiters, timeout=max(0.0, delay_s), return_when=asyncio.FIRST_COMPLETED
            )
        else:
            await asyncio.sleep(max(0.0, delay_s))
    finally:
        for w in waiters:
            w.cancel()
