"""The terminal tools: a shell on a pseudo-terminal, its input, size, output and end."""

from __future__ import annotations

from typing import Any

from meith_core import ActsOn, ToolContext, ToolDefinition, ToolResult, ok_result, tool
from meith_plugins_process.diagnostics import (
    Diagnostics,
    check_scope,
    confinement_notes,
    detached_note,
    exit_scan,
    unconfined_warning,
)
from meith_plugins_process.killer import parse_signal
from meith_plugins_process.models import (
    CreateTerminalArgs,
    EmptyArgs,
    KillTerminalArgs,
    ResizeTerminalArgs,
    SnapshotArgs,
    TerminalIdArgs,
    WriteTerminalArgs,
)
from meith_plugins_process.outputs import (
    CloseResult,
    SnapshotResult,
    TerminalList,
    TerminalSession,
    WriteResult,
)
from meith_plugins_process.owners import Owner
from meith_plugins_process.supervisor import Supervisor
from meith_plugins_process.terminals import (
    DEFAULT_KILL_SIGNAL,
    KILL_GRACE_S,
    TerminalManager,
    resolve_shell,
    resolve_terminal_cwd,
)


class TerminalTools:
    """The runtime's terminals (and the supervisor that starts them) and the tools on them."""

    def __init__(self, supervisor: Supervisor, terminals: TerminalManager) -> None:
        self.sup = supervisor
        self.terminals = terminals

    def definitions(self) -> list[ToolDefinition]:
        # A new terminal acts on its `cwd` argument (and refuses one outside a confined
        # grant); an existing one on the directory it was started in, whoever calls
        # (docs/plugin-guide.md, "What a tool acts on"); the listing on the runtime's state.
        on_terminal = ActsOn.object(
            lambda args: self.terminals.directory_of(args.terminalId), what="terminal"
        )
        return [
            tool(
                self.create_terminal,
                effect="creates",
                capabilities=["starts-process"],
                output=TerminalSession,
                grant_scope="enforced",
                acts_on="path:cwd",
            ),
            tool(
                self.list_terminals,
                effect="reads",
                capabilities=["read-only"],
                idempotent=True,
                output=TerminalList,
                acts_on="global:runtime",
            ),
            tool(
                self.write_terminal,
                effect="acts",
                capabilities=["starts-process"],
                output=WriteResult,
                acts_on=on_terminal,
            ),
            tool(
                self.resize_terminal,
                effect="updates",
                capabilities=["starts-process"],
                output=TerminalSession,
                acts_on=on_terminal,
            ),
            tool(
                self.kill_terminal,
                effect="removes",
                capabilities=["starts-process"],
                output=TerminalSession,
                acts_on=on_terminal,
            ),
            tool(
                self.close_terminal,
                effect="removes",
                capabilities=["starts-process"],
                output=CloseResult,
                acts_on=on_terminal,
            ),
            tool(
                self.get_terminal_snapshot,
                effect="reads",
                capabilities=["read-only"],
                idempotent=True,
                output=SnapshotResult,
                acts_on=on_terminal,
            ),
        ]

    async def create_terminal(self, ctx: ToolContext, args: CreateTerminalArgs) -> ToolResult:
        """Start the user's shell on a new pseudo-terminal; returns the TerminalSession."""
        self.sup.bind_home(ctx.home)
        cwd, warning = resolve_terminal_cwd(args.cwd, ctx.cwd)
        check_scope(ctx, cwd)
        shell = resolve_shell(args.shell)
        diagnostics = unconfined_warning(ctx)
        callback = ctx.child_environment()
        term = await self.terminals.create(
            cwd=cwd,
            shell=shell,
            cols=args.cols,
            rows=args.rows,
            env=args.env,
            owner=Owner.of(ctx.caller, detach=args.detach),
            confined=self.sup.confine(ctx, callback),
            session_callback=callback,
        )
        diagnostics.extend(confinement_notes(term.confined))
        diagnostics.extend(detached_note(ctx, "Terminal", term.id, args.detach))
        if warning:
            diagnostics.append({"level": "warn", "message": warning})
        return ok_result(
            TerminalSession.model_validate(term.record()).model_dump(),
            diagnostics=diagnostics or None,
        )

    async def list_terminals(self, ctx: ToolContext, args: EmptyArgs) -> list[dict[str, Any]]:
        """Every terminal of this runtime (closed ones are forgotten)."""
        return [t.record() for t in self.terminals.visible(ctx.caller)]

    async def write_terminal(self, ctx: ToolContext, args: WriteTerminalArgs) -> dict[str, Any]:
        """Send raw input to a terminal (include \\r to submit a line)."""
        term = self.terminals.get(args.terminalId, ctx.caller)
        await term.write(args.data.encode("utf-8"))
        return {"terminalId": term.id, "written": len(args.data)}

    async def resize_terminal(self, ctx: ToolContext, args: ResizeTerminalArgs) -> dict[str, Any]:
        """Change a terminal's size; the shell's foreground job gets SIGWINCH."""
        term = self.terminals.get(args.terminalId, ctx.caller)
        term.resize(args.cols, args.rows)
        return term.record()

    async def kill_terminal(self, ctx: ToolContext, args: KillTerminalArgs) -> ToolResult:
        """Signal the terminal's whole session (default SIGHUP), SIGKILL after `graceMs` (3 s);
        returns the TerminalSession once its processes are gone."""
        term = self.terminals.get(args.terminalId, ctx.caller)
        was_running = term.status == "running"
        grace_s = KILL_GRACE_S if args.graceMs is None else args.graceMs / 1000
        found = await self.terminals.kill(
            term, parse_signal(args.signal, DEFAULT_KILL_SIGNAL), grace_s
        )
        diagnostics: Diagnostics = []
        if not was_running:
            message = f"Terminal {term.id} had already exited"
            if found:
                message += "; its leftover processes were ended"
            diagnostics = [{"level": "info", "message": message}]
        diagnostics += await exit_scan(term.git_watch)
        return ok_result(term.record(), diagnostics=diagnostics or None)

    async def close_terminal(self, ctx: ToolContext, args: TerminalIdArgs) -> ToolResult:
        """Kill a terminal and forget it; `closed` is false for an unknown id."""
        term = self.terminals.by_id.get(args.terminalId)
        closed = await self.terminals.close(args.terminalId, ctx.caller)
        diagnostics = await exit_scan(term.git_watch) if term is not None and closed else []
        return ok_result(
            {"terminalId": args.terminalId, "closed": closed}, diagnostics=diagnostics or None
        )

    async def get_terminal_snapshot(self, ctx: ToolContext, args: SnapshotArgs) -> dict[str, Any]:
        """A terminal's buffered raw output (all, or from `sinceSeq`) and the `nextSeq` cursor."""
        term = self.terminals.get(args.terminalId, ctx.caller)
        since = args.sinceSeq or 0
        entries = term.logs.since(since)
        return {
            "session": term.record(),
            "buffer": "".join(e[2] for e in entries),
            "nextSeq": term.logs.next_seq,
            "truncated": since < term.logs.first_seq,
        }
