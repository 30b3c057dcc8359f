"""The process tools, bound to one plugin instance's managers."""

from __future__ import annotations

import asyncio
import signal
from typing import TYPE_CHECKING, Any, Final

import anyio.to_thread

from meith_core import (
    NO_TIMEOUT,
    ActsOn,
    CallerKind,
    Diagnostic,
    ErrorCode,
    PlantedGitReport,
    ToolContext,
    ToolDefinition,
    ToolError,
    ToolResult,
    compile_pattern,
    is_within,
    landlock_status,
    ok_result,
    tool,
)
from meith_plugins_process.attach import LogForwarder
from meith_plugins_process.commands import TOOL_TIMEOUT_MS as _RUN_TOOL_TIMEOUT_MS
from meith_plugins_process.commands import render_result
from meith_plugins_process.devservers import STOP_GRACE_S, DevServer, resolve_cwd
from meith_plugins_process.killer import parse_signal
from meith_plugins_process.logbuffer import Entry, entry_dict
from meith_plugins_process.models import (
    AttachLogsArgs,
    AttachResult,
    CloseResult,
    CreateTerminalArgs,
    DevServerList,
    DevServerRecord,
    EmptyArgs,
    KillTerminalArgs,
    ProcessLogsArgs,
    ProcessLogsResult,
    ProcessTreeResult,
    ResizeTerminalArgs,
    RunCommandArgs,
    RunCommandResult,
    SnapshotArgs,
    SnapshotResult,
    StartDevServerArgs,
    StopDevServerArgs,
    StopResult,
    TerminalIdArgs,
    TerminalList,
    TerminalSession,
    WaitForDevServerArgs,
    WriteResult,
    WriteTerminalArgs,
)
from meith_plugins_process.owners import Owner
from meith_plugins_process.readiness import http_status, port_accepts
from meith_plugins_process.terminals import (
    DEFAULT_KILL_SIGNAL,
    KILL_GRACE_S,
    Terminal,
    resolve_shell,
    resolve_terminal_cwd,
)
from meith_plugins_process.tree import process_tree, tree_ports

if TYPE_CHECKING:
    from meith_plugins_process.plugin import Plugin

#: wait_for_dev_server: how often conditions are re-checked, and progress is reported.
_WAIT_POLL_S: Final = 0.2
_WAIT_PROGRESS_S: Final = 1.0
#: The tool's own deadline is the call's `timeoutMs` (at most 10 min); this only backstops it.
_WAIT_TOOL_TIMEOUT_MS: Final = 610_000
_TAIL_ON_FAILURE: Final = 20
#: How long stopping a confined process waits for its exit scan for planted git metadata.
_EXIT_SCAN_WAIT_S: Final = 20.0


async def _exit_scan(
    task: asyncio.Task[PlantedGitReport] | None,
) -> list[Diagnostic | dict[str, str]]:
    """The diagnostics of a confined process's exit scan for planted git metadata."""
    if task is None:
        return []
    try:
        report = await asyncio.wait_for(asyncio.shield(task), _EXIT_SCAN_WAIT_S)
    except (TimeoutError, asyncio.CancelledError):
        return [
            {
                "level": "warn",
                "message": "the scan for git metadata this process planted has not finished; "
                "it goes on, and app_health (check planted-git) shows what it finds",
            }
        ]
    return list(report.diagnostics())


def _unconfined_warning(ctx: ToolContext) -> list[Diagnostic | dict[str, str]]:
    """Say so when a directory-confined grant cannot be enforced by the kernel, and name each
    wall of the confinement this host cannot build."""
    if ctx.grant_scope is None:
        return []
    status = landlock_status()
    if status.available:
        return [
            {
                "level": "warn",
                "message": f"Confinement wall missing on this host: {wall.name} ({wall.fix})",
            }
            for wall in status.missing()
        ]
    return [
        {
            "level": "warn",
            "message": "Not confined: this kernel has no Landlock, so the process runs with the "
            f"user's full access although the grant is limited to {ctx.grant_scope}",
        }
    ]


def _detached_note(
    ctx: ToolContext, what: str, object_id: str, detach: bool
) -> list[Diagnostic | dict[str, str]]:
    """What the result says about the object's lifetime (the audit records the result)."""
    if detach:
        return [
            {
                "level": "info",
                "message": f"{what} {object_id} is detached: handed to the local user, it keeps "
                "running after this session ends",
            }
        ]
    if ctx.caller.caller is CallerKind.AGENT:
        return [
            {
                "level": "info",
                "message": f"{what} {object_id} is stopped when this session ends "
                "(start it with detach: true to hand it to the local user)",
            }
        ]
    return []


def _check_scope(ctx: ToolContext, cwd: str) -> None:
    """A grant confined to a directory confines where processes may start, too."""
    if ctx.grant_scope is not None and not is_within(cwd, ctx.grant_scope):
        raise ToolError(
            ErrorCode.PERMISSION_DENIED,
            f"cwd {cwd} is outside the directory this grant is limited to ({ctx.grant_scope})",
            {"reason": "outside grant scope", "grantScope": ctx.grant_scope},
        )


def build_tools(p: Plugin) -> list[ToolDefinition]:
    sup, devs, terms, cmds = p.supervisor, p.dev_servers, p.terminals, p.commands

    # -- terminals ----------------------------------------------------------------------

    async def create_terminal(ctx: ToolContext, args: CreateTerminalArgs) -> ToolResult:
        """Start the user's shell on a new pseudo-terminal; returns the TerminalSession."""
        sup.bind_home(ctx.home)
        cwd, warning = resolve_terminal_cwd(args.cwd, ctx.cwd)
        _check_scope(ctx, cwd)
        shell = resolve_shell(args.shell)
        diagnostics: list[Diagnostic | dict[str, str]] = _unconfined_warning(ctx)
        callback = ctx.child_environment()
        term = await terms.create(
            cwd=cwd,
            shell=shell,
            cols=args.cols,
            rows=args.rows,
            env=args.env,
            owner=Owner.of(ctx.caller, detach=args.detach),
            confined=sup.confine(
                ctx.grant_scope, callback, net=ctx.grant_net, on_refused=ctx.refusal_recorder()
            ),
            session_callback=callback,
        )
        diagnostics.extend(_detached_note(ctx, "Terminal", term.id, args.detach))
        if warning:
            diagnostics.append({"level": "warn", "message": warning})
        return ok_result(
            TerminalSession.model_validate(term.record()).model_dump(),
            diagnostics=diagnostics or None,
        )

    async def list_terminals(ctx: ToolContext, args: EmptyArgs) -> list[dict[str, Any]]:
        """Every terminal of this runtime (closed ones are forgotten)."""
        return [t.record() for t in terms.visible(ctx.caller)]

    async def write_terminal(ctx: ToolContext, args: WriteTerminalArgs) -> dict[str, Any]:
        """Send raw input to a terminal (include \\r to submit a line)."""
        term = terms.get(args.terminalId, ctx.caller)
        await term.write(args.data.encode("utf-8"))
        return {"terminalId": term.id, "written": len(args.data)}

    async def resize_terminal(ctx: ToolContext, args: ResizeTerminalArgs) -> dict[str, Any]:
        """Change a terminal's size; the shell's foreground job gets SIGWINCH."""
        term = terms.get(args.terminalId, ctx.caller)
        term.resize(args.cols, args.rows)
        return term.record()

    async def kill_terminal(ctx: ToolContext, args: KillTerminalArgs) -> ToolResult:
        """Signal the terminal's whole session (default SIGHUP), SIGKILL after `graceMs` (3 s);
        returns the TerminalSession once its processes are gone."""
        term = terms.get(args.terminalId, ctx.caller)
        was_running = term.status == "running"
        grace_s = KILL_GRACE_S if args.graceMs is None else args.graceMs / 1000
        found = await terms.kill(term, parse_signal(args.signal, DEFAULT_KILL_SIGNAL), grace_s)
        diagnostics: list[Diagnostic | dict[str, str]] = []
        if not was_running:
            message = f"Terminal {term.id} had already exited"
            if found:
                message += "; its leftover processes were ended"
            diagnostics = [{"level": "info", "message": message}]
        diagnostics += await _exit_scan(term.git_watch)
        return ok_result(term.record(), diagnostics=diagnostics or None)

    async def close_terminal(ctx: ToolContext, args: TerminalIdArgs) -> ToolResult:
        """Kill a terminal and forget it; `closed` is false for an unknown id."""
        term = terms.by_id.get(args.terminalId)
        closed = await terms.close(args.terminalId, ctx.caller)
        diagnostics = await _exit_scan(term.git_watch) if term is not None and closed else []
        return ok_result(
            {"terminalId": args.terminalId, "closed": closed}, diagnostics=diagnostics or None
        )

    async def get_terminal_snapshot(ctx: ToolContext, args: SnapshotArgs) -> dict[str, Any]:
        """A terminal's buffered raw output (all, or from `sinceSeq`) and the `nextSeq` cursor."""
        term = terms.get(args.terminalId, ctx.caller)
        since = args.sinceSeq or 0
        entries = term.logs.since(since)
        return {
            "session": term.record(),
            "buffer": "".join(e[2] for e in entries),
            "nextSeq": term.logs.next_seq,
            "truncated": since < term.logs.first_seq,
        }

    # -- dev servers --------------------------------------------------------------------

    async def start_dev_server(ctx: ToolContext, args: StartDevServerArgs) -> ToolResult:
        """Start a long-running command in its own process group and capture its output.
        `command` with `args` runs without a shell; `command` alone runs via /bin/sh -c."""
        sup.bind_home(ctx.home)
        cwd = resolve_cwd(args.cwd, ctx.cwd)
        _check_scope(ctx, cwd)
        running = devs.find_running(cwd, args.command, list(args.args), ctx.caller)
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
        server = await devs.start(
            cwd=cwd,
            command=args.command,
            args=list(args.args),
            name=args.name,
            env=args.env,
            owner=Owner.of(ctx.caller, detach=args.detach),
            confined=sup.confine(
                ctx.grant_scope, callback, net=ctx.grant_net, on_refused=ctx.refusal_recorder()
            ),
            session_callback=callback,
        )
        diagnostics: list[Diagnostic | dict[str, str]] = _unconfined_warning(ctx)
        diagnostics.extend(_detached_note(ctx, "Dev server", server.id, args.detach))
        if server.status == "errored":
            diagnostics.append(
                {"level": "error", "message": next(iter(server.logs.texts()), "failed to start")}
            )
        return ok_result(server.record(), diagnostics=diagnostics or None)

    async def list_dev_servers(ctx: ToolContext, args: EmptyArgs) -> list[dict[str, Any]]:
        """Every dev server of this runtime with its status, pid and port."""
        servers = devs.visible(ctx.caller)
        for server in servers:
            await devs.refresh_port(server)
        return [s.record() for s in servers]

    async def stop_dev_server(ctx: ToolContext, args: StopDevServerArgs) -> ToolResult:
        """Signal the dev server's process group (default SIGTERM), SIGKILL after `graceMs`
        (3 s)."""
        server = devs.get(args.devServerId, ctx.caller)
        grace_s = STOP_GRACE_S if args.graceMs is None else args.graceMs / 1000
        stopped, message = await devs.stop(
            server, parse_signal(args.signal, signal.SIGTERM), grace_s
        )
        diagnostics: list[Diagnostic | dict[str, str]] = (
            [] if stopped else [{"level": "info", "message": message}]
        )
        diagnostics += await _exit_scan(server.git_watch)
        return ok_result(
            {"devServerId": server.id, "stopped": stopped}, diagnostics=diagnostics or None
        )

    async def wait_for_dev_server(ctx: ToolContext, args: WaitForDevServerArgs) -> dict[str, Any]:
        """Wait until a dev server is ready: its port accepts connections (the default), a log
        line matches `logPattern`, and/or `url` answers below 500. Fails when the server exits
        first or `timeoutMs` passes."""
        server = devs.get(args.devServerId, ctx.caller)
        return await _wait_ready(ctx, p, server, args)

    # -- one-shot commands ----------------------------------------------------------------

    async def run_command(ctx: ToolContext, args: RunCommandArgs) -> ToolResult:
        """Run one command to completion (tests, builds, linters) and return its exit status and
        output. `command` (an argv list) runs without a shell; `shell` runs through /bin/sh -c.
        Output streams as log events while it runs; each stream keeps its first and last
        halves of `maxOutputBytes`. At `timeoutMs` (default 120 s) its processes are ended;
        none of them outlives the call."""
        sup.bind_home(ctx.home)
        cwd = resolve_cwd(args.cwd or ctx.cwd, ctx.cwd)
        _check_scope(ctx, cwd)
        callback = ctx.child_environment()
        return await cmds.run(
            ctx,
            args,
            cwd=cwd,
            owner=Owner.of(ctx.caller),
            confined=sup.confine(
                ctx.grant_scope, callback, net=ctx.grant_net, on_refused=ctx.refusal_recorder()
            ),
            session_callback=callback,
            diagnostics=_unconfined_warning(ctx),
        )

    # -- processes and logs -------------------------------------------------------------

    async def get_process_tree(ctx: ToolContext, args: EmptyArgs) -> dict[str, Any]:
        """Every managed dev server and terminal with its process tree and listening ports."""
        items: list[tuple[str, str, int | None, float | None, str, str | None, str, int | None]]
        items = [
            ("dev-server", s.id, s.pid, s.create_time, s.cwd, s.display_command, s.status, s.port)
            for s in devs.visible(ctx.caller)
        ]
        items.extend(
            ("terminal", t.id, t.pid, t.create_time, t.cwd, t.shell, t.status, None)
            for t in terms.visible(ctx.caller)
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
            server = devs.by_id.get(pid_id)
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

    async def get_process_logs(ctx: ToolContext, args: ProcessLogsArgs) -> dict[str, Any]:
        """Buffered log entries of a dev server (lines) or terminal (raw chunks), oldest first."""
        found: DevServer | Terminal
        if args.processId in devs.by_id:
            found = devs.get(args.processId, ctx.caller)
        elif args.processId in terms.by_id:
            found = terms.get(args.processId, ctx.caller)
        else:
            raise ToolError(ErrorCode.TOOL_FAILED, f"Unknown process: {args.processId}")
        entries = found.logs.since(args.sinceSeq or 0, args.limit)
        return {"processId": args.processId, "logs": [entry_dict(e) for e in entries]}

    async def attach_process_logs(ctx: ToolContext, args: AttachLogsArgs) -> dict[str, Any]:
        """Stream a dev server's log lines as `log` events (buffered ones first when `replay`)
        until the call is cancelled; used by `meith devlogs`."""
        if args.devServerId:
            server = devs.get(args.devServerId, ctx.caller)
        else:
            cwd = resolve_cwd(args.cwd or ctx.cwd, ctx.cwd)
            found = devs.newest_in(cwd, ctx.caller)
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

    # What each tool acts on (docs/plugin-guide.md, "What a tool acts on"): a new process acts
    # on its `cwd` argument; an existing one on the directory it was started in, whatever the
    # caller's own directory is; listings on the runtime's state.
    def terminal_dir(args: Any) -> str | None:
        term = terms.by_id.get(getattr(args, "terminalId", ""))
        return term.cwd if term is not None else None

    def server_dir(args: Any) -> str | None:
        server = devs.by_id.get(getattr(args, "devServerId", None) or "")
        return server.cwd if server is not None else None

    def process_dir(args: Any) -> str | None:
        found = devs.by_id.get(args.processId) or terms.by_id.get(args.processId)
        return found.cwd if found is not None else None

    def attached_dir(args: Any) -> str | None:
        return server_dir(args) if args.devServerId else args.cwd

    on_terminal = ActsOn.object(terminal_dir, what="terminal")
    on_server = ActsOn.object(server_dir, what="dev server")
    runtime = "global:runtime"
    return [
        # create_terminal and start_dev_server refuse a cwd outside a confined grant.
        tool(
            create_terminal,
            effect="creates",
            capabilities=["starts-process"],
            output=TerminalSession,
            grant_scope="enforced",
            acts_on="path:cwd",
        ),
        tool(
            list_terminals,
            effect="reads",
            capabilities=["read-only"],
            idempotent=True,
            output=TerminalList,
            acts_on=runtime,
        ),
        tool(
            write_terminal,
            effect="acts",
            capabilities=["starts-process"],
            output=WriteResult,
            acts_on=on_terminal,
        ),
        tool(
            resize_terminal,
            effect="updates",
            capabilities=["starts-process"],
            output=TerminalSession,
            acts_on=on_terminal,
        ),
        tool(
            kill_terminal,
            effect="removes",
            capabilities=["starts-process"],
            output=TerminalSession,
            acts_on=on_terminal,
        ),
        tool(
            close_terminal,
            effect="removes",
            capabilities=["starts-process"],
            output=CloseResult,
            acts_on=on_terminal,
        ),
        tool(
            get_terminal_snapshot,
            effect="reads",
            capabilities=["read-only"],
            idempotent=True,
            output=SnapshotResult,
            acts_on=on_terminal,
        ),
        tool(
            start_dev_server,
            effect="creates",
            capabilities=["starts-process", "accesses-network"],
            output=DevServerRecord,
            grant_scope="enforced",
            acts_on="path:cwd",
        ),
        tool(
            list_dev_servers,
            effect="reads",
            capabilities=["read-only"],
            idempotent=True,
            output=DevServerList,
            acts_on=runtime,
        ),
        tool(
            stop_dev_server,
            effect="removes",
            capabilities=["starts-process"],
            output=StopResult,
            acts_on=on_server,
        ),
        tool(
            get_process_tree,
            effect="reads",
            capabilities=["read-only"],
            idempotent=True,
            output=ProcessTreeResult,
            acts_on=runtime,
        ),
        tool(
            get_process_logs,
            effect="reads",
            capabilities=["read-only"],
            idempotent=True,
            output=ProcessLogsResult,
            acts_on=ActsOn.object(process_dir, what="process"),
        ),
        tool(
            attach_process_logs,
            effect="reads",
            capabilities=["read-only"],
            output=AttachResult,
            timeout_ms=NO_TIMEOUT,
            acts_on=ActsOn.object(attached_dir, what="dev server"),
        ),
        tool(
            wait_for_dev_server,
            effect="reads",
            capabilities=["read-only", "accesses-network"],
            output=DevServerRecord,
            timeout_ms=_WAIT_TOOL_TIMEOUT_MS,
            acts_on=on_server,
        ),
        tool(
            run_command,
            effect="acts",
            acts_on="path:cwd",
            capabilities=["starts-process", "accesses-network"],
            output=RunCommandResult,
            grant_scope="enforced",
            timeout_ms=_RUN_TOOL_TIMEOUT_MS,
            render=render_result,
        ),
    ]


async def _wait_ready(
    ctx: ToolContext, p: Plugin, server: DevServer, args: WaitForDevServerArgs
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
            parts.append(f"port {port} to accept connections" if port else "a port to be detected")
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
                    await p.dev_servers.refresh_port(server)
                    port = server.port
                    if port is not None:
                        ctx.progress(f"port {port} detected")
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
                how = {"stopped": "was stopped", "errored": "failed"}.get(server.status, "exited")
                code = f" (exit code {server.exit_code})" if server.exit_code is not None else ""
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
