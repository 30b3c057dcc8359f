"""The command tool: one command run to completion under the caller's grant."""

from __future__ import annotations

from meith_core import ToolContext, ToolDefinition, ToolResult, tool
from meith_plugins_process.commands import TOOL_TIMEOUT_MS, CommandRunner
from meith_plugins_process.devservers import resolve_cwd
from meith_plugins_process.diagnostics import check_scope, unconfined_warning
from meith_plugins_process.models import RunCommandArgs
from meith_plugins_process.outputs import RunCommandResult
from meith_plugins_process.owners import Owner
from meith_plugins_process.render import render_result
from meith_plugins_process.supervisor import Supervisor


class CommandTools:
    """The runtime's running commands (and the supervisor that starts them) and `run_command`."""

    def __init__(self, supervisor: Supervisor, commands: CommandRunner) -> None:
        self.sup = supervisor
        self.commands = commands

    def definitions(self) -> list[ToolDefinition]:
        # A command acts on its `cwd` argument and refuses one outside a confined grant.
        return [
            tool(
                self.run_command,
                effect="acts",
                acts_on="path:cwd",
                capabilities=["starts-process", "accesses-network"],
                output=RunCommandResult,
                grant_scope="enforced",
                timeout_ms=TOOL_TIMEOUT_MS,
                render=render_result,
            ),
        ]

    async def run_command(self, ctx: ToolContext, args: RunCommandArgs) -> ToolResult:
        """Run one command to completion (tests, builds, linters) and return its exit status and
        output. `command` as a list runs without a shell; a command line (`command` as a
        string, or `shell`) runs through /bin/sh -c.
        Output streams as log events while it runs; each stream keeps its first and last
        halves of `maxOutputBytes`. At `timeoutMs` (default 120 s) its processes are ended;
        none of them outlives the call."""
        self.sup.bind_home(ctx.home)
        cwd = resolve_cwd(args.cwd or ctx.cwd, ctx.cwd)
        check_scope(ctx, cwd)
        callback = ctx.child_environment()
        return await self.commands.run(
            ctx,
            args,
            cwd=cwd,
            owner=Owner.of(ctx.caller),
            confined=self.sup.confine(ctx, callback),
            session_callback=callback,
            diagnostics=unconfined_warning(ctx),
        )
