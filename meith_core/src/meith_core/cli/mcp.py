"""`meith mcp` (the MCP bridge), `meith mcp token` and `meith sessions`.

The bridge's implementation (and the MCP SDK) is imported only when the command runs.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any

import typer

from meith_core.cli.options import InstanceOpt, JsonOpt, SocketOpt

mcp_app = typer.Typer(
    help="Serve meith's tools to MCP clients (stdio by default, or streamable HTTP).",
    no_args_is_help=False,
    rich_markup_mode=None,
)

_EPILOG = (
    "\b\nExamples:\n"
    "  meith mcp\n"
    "  meith mcp --plugins git,process --read-only\n"
    "  meith mcp --tools coding,git   (profiles: coding (the default), git, browser, all)\n"
    "  meith mcp --tools 'git_*,get_browser_*'\n"
    "  meith mcp --http 8765\n"
    "  meith mcp --structured   (results as JSON too, for programs)\n"
    "  meith mcp token"
)


@mcp_app.callback(invoke_without_command=True, epilog=_EPILOG)
def mcp(
    ctx: typer.Context,
    http: Annotated[
        str | None,
        typer.Option("--http", help="Serve streamable HTTP at [HOST:]PORT/mcp instead of stdio."),
    ] = None,
    allow_remote: Annotated[
        bool, typer.Option("--allow-remote", help="Allow --http on a non-loopback address.")
    ] = False,
    allow_origin: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-origin",
            help="With --http: also accept requests from this browser origin "
            "(scheme://host:port; repeatable). By default only the bridge's own origin is.",
        ),
    ] = None,
    no_start: Annotated[
        bool, typer.Option("--no-start", help="Fail instead of starting a runtime when none runs.")
    ] = False,
    socket: SocketOpt = None,
    instance: InstanceOpt = None,
    plugins: Annotated[
        str | None, typer.Option("--plugins", help="Only these plugins' tools (comma-separated).")
    ] = None,
    tools: Annotated[
        str | None,
        typer.Option(
            "--tools",
            help="Tool profiles and globs, comma-separated: coding (the default: files, "
            "run_command, git status/diff/log), git, browser, all, or globs like 'git_*'.",
        ),
    ] = None,
    read_only: Annotated[
        bool, typer.Option("--read-only", help="No privileged tool is listed or callable.")
    ] = False,
    cwd: Annotated[
        str | None, typer.Option("--cwd", help="Working directory for calls (default: here).")
    ] = None,
    structured: Annotated[
        bool,
        typer.Option(
            "--structured",
            help="Also send each result's structured content (the machine form) and the "
            "tools' output schemas, for programs. Off by default: results are the text "
            "written for the model, which some clients replace with the JSON when both come.",
        ),
    ] = False,
) -> None:
    """Bridge MCP clients to the running runtime (starting one when none runs)."""
    if ctx.invoked_subcommand is not None:
        return
    raise typer.Exit(
        run_mcp(
            http,
            allow_remote,
            not no_start,
            socket,
            instance,
            plugins,
            tools,
            read_only,
            cwd,
            tuple(allow_origin or ()),
            structured,
        )
    )


@mcp_app.command("token")
def mcp_token() -> None:
    """Print the bearer token `meith mcp --http` requires (created on first use, mode 0600)."""
    from meith_core.base.home import MeithHome
    from meith_core.mcp.http import load_or_create_token

    sys.stdout.write(load_or_create_token(MeithHome.from_env()) + "\n")


@mcp_app.command(
    "config",
    epilog="\b\nExamples:\n  meith mcp config claude-code\n  meith mcp config codex --cwd ~/src/app --tools coding,git",
)
def mcp_config(
    client: Annotated[str, typer.Argument(help="claude-code, codex, cursor, vscode or inspector.")],
    cwd: Annotated[
        str | None,
        typer.Option("--cwd", help="The project the agent works in (default: here)."),
    ] = None,
    tools: Annotated[
        str | None, typer.Option("--tools", help="Tool profiles and globs, as for meith mcp.")
    ] = None,
    name: Annotated[str, typer.Option("--name", help="The server's name in the client.")] = "meith",
) -> None:
    """Print a client's configuration entry for this bridge, ready to paste."""
    raise typer.Exit(run_config(client, cwd, tools, name))


def run_config(client: str, cwd: str | None, tools: str | None, name: str) -> int:
    import shutil

    from meith_core.base.home import MeithHome
    from meith_core.cli.output import EXIT_OK, EXIT_USAGE, fail
    from meith_core.mcp.client_configs import CLIENTS, launch, render

    if client not in CLIENTS:
        return fail(f"unknown client {client!r}: one of {', '.join(CLIENTS)}", EXIT_USAGE)
    workdir = os.path.abspath(os.path.expanduser(cwd or os.getcwd()))
    if not os.path.isdir(workdir):
        return fail(f"--cwd {workdir}: no such directory", EXIT_USAGE)
    # Clients do not all share the shell's PATH: this meith by its full path, unless the one
    # on PATH is this one.
    me = os.path.realpath(sys.argv[0])
    on_path = shutil.which("meith")
    command = "meith" if on_path and os.path.realpath(on_path) == me else me
    if not os.path.isfile(command) and command != "meith":
        command = "meith"
    entry = launch(command, _tilde(workdir), _tilde(str(MeithHome.from_env().root)), tools)
    sys.stderr.write(f"# {CLIENTS[client].title}: this goes in {CLIENTS[client].where}\n")
    sys.stdout.write(render(client, entry, name))
    return EXIT_OK


def _tilde(path: str) -> str:
    """`~/x` for a path in the user's home: the same for every client that reads it."""
    home = os.path.expanduser("~")
    return "~" + path[len(home) :] if path == home or path.startswith(home + os.sep) else path


def run_mcp(
    http: str | None,
    allow_remote: bool,
    start: bool,
    socket_path: str | None,
    instance: str | None,
    plugins: str | None,
    tools: str | None,
    read_only: bool,
    cwd: str | None,
    origins: tuple[str, ...] = (),
    structured: bool = False,
) -> int:
    import anyio

    from meith_core.base.home import MeithHome
    from meith_core.base.instances import TargetError
    from meith_core.cli.output import EXIT_UNREACHABLE, EXIT_USAGE, fail

    try:
        from meith_core.mcp.autostart import StartError, find_or_start
        from meith_core.mcp.http import (
            is_loopback,
            load_or_create_token,
            parse_bind,
            parse_origin,
        )
        from meith_core.mcp.profiles import Selection
        from meith_core.mcp.serve import run_http, run_stdio
        from meith_core.mcp.sessions import BridgeConfig, log
    except ImportError as exc:
        return fail(
            f"meith mcp needs the MCP SDK ({exc.name} is missing): pip install 'meith-core[mcp]'",
            EXIT_USAGE,
        )

    home = MeithHome.from_env()
    bind: tuple[str, int] | None = None
    if http is not None:
        try:
            bind = parse_bind(http)
        except ValueError as exc:
            return fail(str(exc), EXIT_USAGE)
        if not is_loopback(bind[0]) and not allow_remote:
            return fail(
                f"--http {http}: {bind[0]} is not a loopback address; anyone who can reach it "
                "could try the token. Pass --allow-remote to bind it anyway.",
                EXIT_USAGE,
            )
    try:
        origins = tuple(parse_origin(o) for o in origins)
    except ValueError as exc:
        return fail(str(exc), EXIT_USAGE)
    workdir = os.path.abspath(os.path.expanduser(cwd)) if cwd else os.getcwd()
    if not os.path.isdir(workdir):
        return fail(f"--cwd {workdir}: no such directory", EXIT_USAGE)
    try:
        path, started = find_or_start(home, socket_path, instance, start=start)
    except (TargetError, StartError) as exc:
        return fail(str(exc), EXIT_UNREACHABLE)
    if started:
        log(f"started a meith runtime in the background at {path} (logs: {home.logs_path})")
    config = BridgeConfig(
        socket_path=path,
        cwd=workdir,
        selection=Selection.parse(plugins, tools, read_only),
        artifacts_dir=home.artifacts_dir,
        audit_path=home.audit_path,
        cwd_fixed=cwd is not None,
        structured=structured,
    )
    try:
        if bind is None:
            anyio.run(run_stdio, config, backend="asyncio")
        else:
            token = load_or_create_token(home)
            anyio.run(run_http, config, bind[0], bind[1], token, origins, backend="asyncio")
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        return fail(f"meith mcp: {exc}", EXIT_UNREACHABLE)
    return 0


def run_sessions(as_json: bool, socket_path: str | None, instance: str | None) -> int:
    from meith_core.cli.output import EXIT_OK, EXIT_UNREACHABLE, fail, pretty, table
    from meith_core.client import Client, TransportError

    try:
        with Client(socket_path, instance=instance) as client:
            listed = client.list_sessions(timeout=10.0)
    except (TransportError, TimeoutError) as exc:
        return fail(f"cannot list the runtime's sessions: {exc}", EXIT_UNREACHABLE)
    sessions = [s for s in listed if isinstance(s, dict)]
    if as_json:
        sys.stdout.write(pretty(sessions) + "\n")
        return EXIT_OK
    rows = []
    for s in sessions:
        rows.append(
            [
                str(s.get("sessionId") or "-"),
                str(s.get("caller") or "-"),
                str(s.get("label") or "-"),
                str(s.get("since") or "-")[:19].replace("T", " "),
                str(s.get("calls", 0)),
                _state_text(s),
                str(s.get("workspace") or "-"),
                _grants_text(s.get("grants"), with_id=False),
                _grants_text(s.get("standingGrants"), with_id=True),
                ", ".join(_owned_text(o) for o in s.get("owns") or []) or "-",
            ]
        )
    if not rows:
        sys.stdout.write("No live sessions.\n")
        return EXIT_OK
    # The session's own grants end with it; standing ones (`meith grants`) are shared and
    # named by id, so `meith grants revoke ID` is at hand.
    headers = ["SESSION", "CALLER", "LABEL", "SINCE (UTC)", "CALLS", "STATE", "WORKSPACE"]
    table(rows, [*headers, "SESSION GRANTS", "STANDING GRANTS", "OWNS"])
    return EXIT_OK


def _state_text(session: dict[str, Any]) -> str:
    if session.get("state") == "detached":
        ends = session.get("endsInS")
        return f"detached (ends in {ends}s)" if isinstance(ends, int) else "detached"
    return "attached"


def _owned_text(item: Any) -> str:
    """`dev-server dev_…`, with `(detached)` for what outlives the session."""
    if not isinstance(item, dict):
        return str(item)
    text = f"{item.get('kind') or '?'} {item.get('id') or '?'}"
    return text + " (detached)" if item.get("detached") else text


def _grants_text(grants: Any, with_id: bool) -> str:
    return ", ".join(_grant_text(g, with_id) for g in grants or []) or "-"


def _grant_text(grant: Any, with_id: bool) -> str:
    if not isinstance(grant, dict):
        return str(grant)
    caps = "+".join(str(c) for c in grant.get("capabilities") or [])
    text = f"{caps}{'@' + str(grant['tool']) if grant.get('tool') else ''}"
    return f"{text} ({grant.get('id')})" if with_id else text


def register(app: typer.Typer) -> None:
    """Add `mcp` and `sessions` to the main app."""
    app.add_typer(mcp_app, name="mcp")

    @app.command(epilog="\b\nExamples:\n  meith sessions\n  meith sessions --json")
    def sessions(
        json_output: JsonOpt = False,
        socket: SocketOpt = None,
        instance: InstanceOpt = None,
    ) -> None:
        """List the runtime's live sessions: id, caller, label, since, calls, whether a connection
        holds it, the session's own grants and the standing grants that apply to it, and what it
        owns (dev servers, terminals, tabs)."""
        raise typer.Exit(run_sessions(json_output, socket, instance))
