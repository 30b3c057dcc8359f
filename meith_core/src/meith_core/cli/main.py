"""The `meith` command line.

Command bodies import their implementation lazily: `meith --help`, `meith tools` and
`meith call` load no plugin, no Playwright and no server-side module (start-up time is
measured in bench/).
"""

from typing import Annotated, Literal, cast

import typer

from meith_core._version import __version__
from meith_core.base.suggest import not_one_of
from meith_core.cli.audit import audit_app
from meith_core.cli.grants import grants_app
from meith_core.cli.options import InstanceOpt, JsonOpt, SocketOpt, examples
from meith_core.cli.plugins import plugins_app
from meith_core.cli.settings import settings_app

app = typer.Typer(
    name="meith",
    help="meith: one door to local tools (git, processes, a browser, plugins), validated, "
    "permission-checked and audited.\n\nStart the runtime with `meith serve`, then call tools.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"meith {__version__}")
        raise typer.Exit(0)


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """meith: a local tool host."""


@app.command(epilog=examples("meith serve --approvals prompt"))
def serve(
    socket: Annotated[
        str | None,
        typer.Option("--socket", help="Listen here (default: $MEITH_HOME/run/meith.sock)."),
    ] = None,
    approvals: Annotated[
        str,
        typer.Option(
            "--approvals",
            help="deny (default): refuse privileged calls no grant covers, with a hint saying which "
            "grant would allow them; prompt: ask on this terminal instead.",
        ),
    ] = "deny",
    log_format: Annotated[
        str | None,
        typer.Option("--log-format", help="console or json (default: console on a terminal)."),
    ] = None,
    label: Annotated[
        str | None,
        typer.Option(
            "--label",
            help="A name for this instance, for `meith instances` and `meith stop` (default: none).",
        ),
    ] = None,
    idle_timeout: Annotated[
        float | None,
        typer.Option(
            "--idle-timeout",
            envvar="MEITH_IDLE_TIMEOUT",
            help="Close a connection with nothing in flight after this many silent seconds "
            '(default 600; 0: never). Any frame resets it; clients may send {"type":"ping"}.',
        ),
    ] = None,
) -> None:
    """Run the runtime in the foreground: load plugins and listen on a Unix socket."""
    # Denial is the default everywhere (terminal or not): a call never hangs on a prompt that
    # nobody was told to watch. `--approvals prompt` opts in to asking on this terminal.
    if approvals not in ("deny", "prompt"):
        raise typer.BadParameter(
            not_one_of(approvals, ("deny", "prompt")), param_hint="--approvals"
        )
    if log_format not in (None, "console", "json"):
        raise typer.BadParameter(
            not_one_of(str(log_format), ("console", "json")), param_hint="--log-format"
        )
    if idle_timeout is not None and idle_timeout < 0:
        raise typer.BadParameter("must be 0 (never) or more seconds", param_hint="--idle-timeout")
    from meith_core.serve.daemon import serve as run_serve
    from meith_core.serve.socket_server import IDLE_TIMEOUT_S

    if idle_timeout is None:
        idle_timeout = IDLE_TIMEOUT_S

    raise typer.Exit(
        run_serve(
            socket_path=socket,
            approvals=cast(Literal["prompt", "deny"], approvals),
            log_format=cast(Literal["console", "json"] | None, log_format),
            label=label,
            idle_timeout_s=idle_timeout or None,
        )
    )


@app.command(
    context_settings={
        "ignore_unknown_options": True,
        "allow_extra_args": True,
        "help_option_names": [],
    },
    epilog=examples(
        "meith call app_health",
        "meith call git_diff --scope staged --include-patches false",
        'meith call set_app_settings --settings-json \'{"theme": "dark"}\'',
        "meith call git_log --help",
        "meith call git_diff --as-agent=claude-code",
    ),
)
def call(
    ctx: typer.Context,
    tokens: Annotated[
        list[str] | None, typer.Argument(metavar="TOOL [--key value ...]", show_default=False)
    ] = None,
) -> None:
    """Call a tool: meith call TOOL [--key value ...] [--key-json JSON] [--arg-json JSON] [--stdin]
    [--json] [--quiet] [--verbose] [--timeout MS] [--cwd DIR] [--socket PATH] [--instance PID|LABEL]
    [--as-agent[=NAME]].

    Repeated flags accumulate into an array; values are typed by the tool's schema; --stdin reads
    a JSON object of arguments. `meith call TOOL --help` shows the tool's parameters.
    --as-agent makes the call as an MCP agent (named NAME) working here, and prints exactly the
    text and metadata `meith mcp` would send it.
    """
    from meith_core.cli.call import run_call

    raise typer.Exit(run_call(list(tokens or []), ctx) or 0)


@app.command(epilog=examples("meith tools --long", "meith tools --json | jq '.[].name'"))
def tools(
    json_output: JsonOpt = False,
    long: Annotated[
        bool, typer.Option("--long", help="Show each description whole, not cut to one line.")
    ] = False,
    socket: SocketOpt = None,
    instance: InstanceOpt = None,
) -> None:
    """List the tools the runtime offers, with their capabilities."""
    from meith_core.cli.call import run_tools

    raise typer.Exit(run_tools(json_output, socket, instance, long=long))


@app.command(epilog=examples("meith devlogs --cwd ~/src/app --no-replay"))
def devlogs(
    id: Annotated[str | None, typer.Option("--id", help="The dev server id (dev_...).")] = None,
    cwd: Annotated[
        str | None,
        typer.Option(
            "--cwd",
            help="Attach to the newest dev server started in this directory (default: here).",
        ),
    ] = None,
    no_replay: Annotated[
        bool, typer.Option("--no-replay", help="Only new lines, not the buffered ones.")
    ] = False,
    json_output: JsonOpt = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No banner.")] = False,
    socket: SocketOpt = None,
    instance: InstanceOpt = None,
) -> None:
    """Stream a dev server's log lines until Ctrl-C."""
    from meith_core.cli.call import run_devlogs

    raise typer.Exit(run_devlogs(id, cwd, not no_replay, json_output, quiet, socket, instance))


@app.command(epilog=examples("meith instances --json"))
def instances(json_output: JsonOpt = False) -> None:
    """List the live runtimes of this MEITH_HOME."""
    from meith_core.cli.runtimes import run_instances

    raise typer.Exit(run_instances(json_output))


@app.command(epilog=examples("meith stop", "meith stop 4242", "meith stop --all"))
def stop(
    target: Annotated[
        str | None, typer.Argument(help="PID or label of the runtime to stop.")
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Stop every live runtime.")] = False,
    json_output: JsonOpt = False,
) -> None:
    """Stop a running runtime (SIGTERM, then wait for it to exit)."""
    from meith_core.cli.runtimes import run_stop

    raise typer.Exit(run_stop(target, all_, json_output))


@app.command(epilog=examples("meith ui", "meith ui --port 8765 --no-browser"))
def ui(
    port: Annotated[
        int, typer.Option("--port", help="Listen on this port (default: any free one).")
    ] = 0,
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Print the URL only; open no browser.")
    ] = False,
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on (loopback unless --allow-remote).")
    ] = "127.0.0.1",
    allow_remote: Annotated[
        bool,
        typer.Option(
            "--allow-remote", help="Allow a non-loopback --host (needs --tls-cert/--tls-key)."
        ),
    ] = False,
    tls_cert: Annotated[
        str | None, typer.Option("--tls-cert", help="TLS certificate (PEM).")
    ] = None,
    tls_key: Annotated[str | None, typer.Option("--tls-key", help="TLS private key (PEM).")] = None,
    public_name: Annotated[
        list[str] | None,
        typer.Option(
            "--public-name",
            help="With --allow-remote: a host name browsers use to reach it (the Host check).",
        ),
    ] = None,
    socket: SocketOpt = None,
) -> None:
    """Serve the local web console: sessions, approvals, audit, grants, plugins, processes."""
    from meith_core.cli.ui import run_ui

    raise typer.Exit(
        run_ui(
            host=host,
            port=port,
            no_browser=no_browser,
            socket_path=socket,
            allow_remote=allow_remote,
            tls_cert=tls_cert,
            tls_key=tls_key,
            public_names=tuple(public_name or ()),
        )
    )


app.add_typer(plugins_app, name="plugins")
app.add_typer(grants_app, name="grants")
app.add_typer(audit_app, name="audit")
app.add_typer(settings_app, name="settings")


from meith_core.cli.doctor import register as _register_doctor  # noqa: E402
from meith_core.cli.mcp import register as _register_mcp  # noqa: E402

_register_mcp(app)  # `meith mcp`, `meith sessions`
_register_doctor(app)  # `meith doctor`
