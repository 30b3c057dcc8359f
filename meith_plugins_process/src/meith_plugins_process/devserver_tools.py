"""The dev server tools: a long-running command started, listed and stopped."""

from __future__ import annotations

import signal
from typing import Any

from meith_core import ActsOn, ToolContext, ToolDefinition, ToolResult, ok_result, tool
from meith_plugins_process.devservers import STOP_GRACE_S, DevServerManager, resolve_cwd
from meith_plugins_process.diagnostics import (
    Diagnostics,
    check_scope,
    confinement_notes,
    detached_note,
    exit_scan,
    unconfined_warning,
)
from meith_plugins_process.killer import parse_signal
from meith_plugins_process.models import EmptyArgs, StartDevServerArgs, StopDevServerArgs
from meith_plugins_process.outputs import DevServerList, DevServerRecord, StopResult
from meith_plugins_process.owners import Owner
from meith_plugins_process.supervisor import Supervisor


class DevServerTools:
    """The runtime's dev servers (and the supervisor that starts them) and the tools on them."""

    def __init__(self, supervisor: Supervisor, dev_servers: DevServerManager) -> None:
        self.sup = supervisor
        self.dev_servers = dev_servers

    def definitions(self) -> list[ToolDefinition]:
        # A new dev server acts on its `cwd` argument (and refuses one outside a confined
        # grant); an existing one on the directory it was started in, whoever calls
        # (docs/plugin-guide.md, "What a tool acts on"); the listing on the runtime's state.
        on_server = ActsOn.object(
            lambda args: self.dev_servers.directory_of(args.devServerId), what="dev server"
        )
        return [
            tool(
                self.start_dev_server,
                effect="creates",
                capabilities=["starts-process", "accesses-network"],
                output=DevServerRecord,
                grant_scope="enforced",
                acts_on="path:cwd",
            ),
            tool(
                self.list_dev_servers,
                effect="reads",
                capabilities=["read-only"],
                idempotent=True,
                output=DevServerList,
                acts_on="global:runtime",
            ),
            tool(
                self.stop_dev_server,
                effect="removes",
                capabilities=["starts-process"],
                output=StopResult,
                acts_on=on_server,
            ),
        ]

    async def start_dev_server(self, ctx: ToolContext, args: StartDevServerArgs) -> ToolResult:
        """Start a long-running command in its own process group and capture its output.
        `command` as a list, or with `args`, runs without a shell; a string alone runs via
        /bin/sh -c."""
        self.sup.bind_home(ctx.home)
        cwd = resolve_cwd(args.cwd, ctx.cwd)
        check_scope(ctx, cwd)
        command, arguments = args.program
        running = self.dev_servers.find_running(cwd, command, arguments, ctx.caller)
        if running is not None:
            return ok_result(
                running.record(),
                diagnostics=[
                    {
                        "level": "warn",
                        "message": f"Dev server {running.id} is already running this command in "
                        f"{cwd}; returning it instead of starting another",
                    }
                ],
            )
        callback = ctx.child_environment()
        server = await self.dev_servers.start(
            cwd=cwd,
            command=command,
            args=arguments,
            name=args.name,
            env=args.env,
            owner=Owner.of(ctx.caller, detach=args.detach),
            confined=self.sup.confine(ctx, callback),
            session_callback=callback,
            ports=list(args.ports),
        )
        diagnostics = unconfined_warning(ctx) + confinement_notes(server.confined)
        diagnostics.extend(detached_note(ctx, "Dev server", server.id, args.detach))
        if server.status == "errored":
            diagnostics.append(
                {"level": "error", "message": next(iter(server.logs.texts()), "failed to start")}
            )
        return ok_result(server.record(), diagnostics=diagnostics or None)

    async def list_dev_servers(self, ctx: ToolContext, args: EmptyArgs) -> list[dict[str, Any]]:
        """Every dev server of this runtime with its status, pid and port."""
        servers = self.dev_servers.visible(ctx.caller)
        for server in servers:
            await self.dev_servers.refresh_port(server)
        return [s.record() for s in servers]

    async def stop_dev_server(self, ctx: ToolContext, args: StopDevServerArgs) -> ToolResult:
        """Signal the dev server's process group (default SIGTERM), SIGKILL after `graceMs`
        (3 s)."""
        server = self.dev_servers.get(args.devServerId, ctx.caller)
        grace_s = STOP_GRACE_S if args.graceMs is None else args.graceMs / 1000
        stopped, message = await self.dev_servers.stop(
            server, parse_signal(args.signal, signal.SIGTERM), grace_s
        )
        diagnostics: Diagnostics = [] if stopped else [{"level": "info", "message": message}]
        diagnostics += await exit_scan(server.git_watch)
        return ok_result(
            {"devServerId": server.id, "stopped": stopped}, diagnostics=diagnostics or None
        )
