"""The `meith` command line.

Command bodies import their implementation lazily: `meith --help`, `meith tools` and
`meith call` load no plugin, no Playwright and no server-side module (start-up time is
measured in bench/).
"""

from typing import Annotated, Literal, cast

import typer

from meith_core._cli.audit import audit_app
from meith_core._cli.options import InstanceOpt, JsonOpt, SocketOpt
from meith_core._version import __version__

app = typer.Typer(
    name="meith",
    help="meith: one door to local tools (git, processes, a browser, plugins), validated, "
    "permission-checked and audited.\n\nStart the runtime with `meith serve`, then call tools.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,
)


def _examples(*lines: str) -> str:
    """An epilog of examples; click's \\b keeps the lines as written."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)


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


@app.command(epilog=_examples("meith serve --approvals prompt"))
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
        typer.Option("--label", help="A name for this instance (default: the home folder name)."),
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
    if approvals not in ("prompt", "deny"):
        raise typer.BadParameter("must be prompt or deny", param_hint="--approvals")
    if log_format not in (None, "console", "json"):
        raise typer.BadParameter("must be console or json", param_hint="--log-format")
    if idle_timeout is not None and idle_timeout < 0:
        raise typer.BadParameter("must be 0 (never) or more seconds", param_hint="--idle-timeout")
    from meith_core._runtime.daemon import serve as run_serve
    from meith_core._runtime.socket_server import IDLE_TIMEOUT_S

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
    epilog=_examples(
        "meith call app_health",
        "meith call git_diff --scope staged --include-patches false",
        'meith call set_app_settings --settings-json \'{"theme": "dark"}\'',
        "meith call git_log --help",
    ),
)
def call(
    ctx: typer.Context,
    tokens: Annotated[
        list[str] | None, typer.Argument(metavar="TOOL [--key value ...]", show_default=False)
    ] = None,
) -> None:
    """Call a tool: meith call TOOL [--key value ...] [--key-json JSON] [--arg-json JSON] [--stdin]
    [--json] [--quiet] [--verbose] [--timeout MS] [--cwd DIR] [--socket PATH] [--instance PID|LABEL].

    Repeated flags accumulate into an array; true/false and numbers are coerced; --stdin reads a
    JSON object of arguments. `meith call TOOL --help` shows the tool's parameters.
    """
    from meith_core._cli.call import run_call

    raise typer.Exit(run_call(list(tokens or []), ctx) or 0)


@app.command(epilog=_examples("meith tools --long", "meith tools --json | jq '.[].name'"))
def tools(
    json_output: JsonOpt = False,
    long: Annotated[
        bool, typer.Option("--long", help="Show each description whole, not cut to one line.")
    ] = False,
    socket: SocketOpt = None,
    instance: InstanceOpt = None,
) -> None:
    """List the tools the runtime offers, with their capabilities."""
    from meith_core._cli.call import run_tools

    raise typer.Exit(run_tools(json_output, socket, instance, long=long))


@app.command(epilog=_examples("meith devlogs --cwd ~/src/app --no-replay"))
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
    from meith_core._cli.call import run_devlogs

    raise typer.Exit(run_devlogs(id, cwd, not no_replay, json_output, quiet, socket, instance))


@app.command(epilog=_examples("meith instances --json"))
def instances(json_output: JsonOpt = False) -> None:
    """List the live runtimes of this MEITH_HOME."""
    from meith_core._cli.admin import run_instances

    raise typer.Exit(run_instances(json_output))


@app.command(epilog=_examples("meith stop", "meith stop 4242", "meith stop --all"))
def stop(
    target: Annotated[
        str | None, typer.Argument(help="PID or label of the runtime to stop.")
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Stop every live runtime.")] = False,
    json_output: JsonOpt = False,
) -> None:
    """Stop a running runtime (SIGTERM, then wait for it to exit)."""
    from meith_core._cli.admin import run_stop

    raise typer.Exit(run_stop(target, all_, json_output))


plugins_app = typer.Typer(
    help="List discovered plugins; approve or revoke their capabilities.",
    no_args_is_help=False,
    rich_markup_mode=None,
)
app.add_typer(plugins_app, name="plugins")


@plugins_app.callback(
    invoke_without_command=True, epilog=_examples("meith plugins --json", "meith plugins -v")
)
def plugins_list(
    ctx: typer.Context,
    json_output: JsonOpt = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose", "-v", help="Also the traceback of a failed plugin and import times."
        ),
    ] = False,
) -> None:
    """Every plugin of the running runtime (else: installed here): id, distribution and version,
    status, tools, capabilities, approval."""
    if ctx.invoked_subcommand is None:
        from meith_core._cli.admin import run_plugins_list

        raise typer.Exit(run_plugins_list(json_output, verbose))


@plugins_app.command(
    "approve",
    epilog=_examples(
        "meith plugins approve git", "meith plugins approve git read-only writes-files"
    ),
)
def plugins_approve(
    plugin_id: Annotated[str, typer.Argument(help="The plugin id (see meith plugins).")],
    capabilities: Annotated[
        list[str] | None, typer.Argument(help="Capabilities to approve (default: all it requests).")
    ] = None,
) -> None:
    """Approve a plugin's capabilities (pinned to its current version and tools)."""
    from meith_core._cli.admin import run_plugins_approve

    raise typer.Exit(run_plugins_approve(plugin_id, capabilities or []))


@plugins_app.command("reload", epilog=_examples("meith plugins reload"))
def plugins_reload() -> None:
    """Have the running runtime load plugins installed since it started (it also notices them
    by itself when tools or plugins are listed), and retry those that failed to load."""
    from meith_core._cli.admin import run_plugins_reload

    raise typer.Exit(run_plugins_reload())


@plugins_app.command(
    "new", epilog=_examples("meith plugins new weather", "meith plugins new weather --dir ~/src/w")
)
def plugins_new(
    name: Annotated[str, typer.Argument(help="The plugin id, e.g. weather (lowercase).")],
    directory: Annotated[
        str | None,
        typer.Option("--dir", help="Where to write it (default: ./meith-NAME; must be empty)."),
    ] = None,
) -> None:
    """Write a complete, tested plugin distribution to start from."""
    from meith_core._cli.plugins import run_plugins_new

    raise typer.Exit(run_plugins_new(name, directory))


@plugins_app.command(
    "check",
    epilog=_examples("meith plugins check", "meith plugins check git", "meith plugins check ."),
)
def plugins_check(
    target: Annotated[
        str | None,
        typer.Argument(
            help="An installed plugin id, or a project directory (default: all installed)."
        ),
    ] = None,
    json_output: JsonOpt = False,
) -> None:
    """Vet a plugin before publishing it; lists every problem, exits 1 on any error."""
    from meith_core._cli.plugins import run_plugins_check

    raise typer.Exit(run_plugins_check(target, json_output))


@plugins_app.command("revoke", epilog=_examples("meith plugins revoke browser"))
def plugins_revoke(plugin_id: Annotated[str, typer.Argument(help="The plugin id.")]) -> None:
    """Withdraw a plugin's approval; its privileged tools stop working at once."""
    from meith_core._cli.admin import run_plugins_revoke

    raise typer.Exit(run_plugins_revoke(plugin_id))


grants_app = typer.Typer(
    help="Standing grants: privileged capabilities for every cli or agent session.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(grants_app, name="grants")


@grants_app.command("list", epilog=_examples("meith grants list --json"))
def grants_list(json_output: JsonOpt = False) -> None:
    """Show the standing grants."""
    from meith_core._cli.admin import run_grants_list

    raise typer.Exit(run_grants_list(json_output))


@grants_app.command(
    "add",
    epilog=_examples(
        "meith grants add --caller cli --capability writes-files --tool git_commit --cwd ~/src/app",
        "meith grants add --caller agent --capability starts-process --expires 1h",
        "meith grants add --caller agent --agent claude-code --capability writes-files --uses 5",
    ),
)
def grants_add(
    capability: Annotated[
        list[str],
        typer.Option("--capability", "-c", help="A privileged capability (repeat for several)."),
    ],
    caller: Annotated[str, typer.Option("--caller", help="cli or agent.")] = "cli",
    agent: Annotated[
        str | None,
        typer.Option("--agent", help="Only agents with this name (the MCP client's name)."),
    ] = None,
    tool: Annotated[str | None, typer.Option("--tool", help="Only this tool.")] = None,
    cwd: Annotated[
        str | None,
        typer.Option("--cwd", help="Only calls whose working directory is inside this one."),
    ] = None,
    expires: Annotated[
        str | None, typer.Option("--expires", help="Lifetime such as 30m, 1h, 7d.")
    ] = None,
    uses: Annotated[
        int | None,
        typer.Option("--uses", help="Allowed calls in all, across sessions and restarts."),
    ] = None,
    json_output: JsonOpt = False,
) -> None:
    """Add a standing grant; running runtimes pick it up without a restart."""
    from meith_core._cli.admin import run_grants_add

    raise typer.Exit(
        run_grants_add(caller, capability, tool, cwd, expires, uses, json_output, agent)
    )


@grants_app.command("revoke", epilog=_examples("meith grants revoke g_1a2b3c4d5e6f"))
def grants_revoke(
    grant_id: Annotated[str, typer.Argument(help="The grant id (see meith grants list).")],
) -> None:
    """Remove a standing grant."""
    from meith_core._cli.admin import run_grants_revoke

    raise typer.Exit(run_grants_revoke(grant_id))


app.add_typer(audit_app, name="audit")


settings_app = typer.Typer(
    help="Read and change $MEITH_HOME/settings.json.", no_args_is_help=False, rich_markup_mode=None
)
app.add_typer(settings_app, name="settings")


@settings_app.callback(invoke_without_command=True)
def settings_default(ctx: typer.Context) -> None:
    """Read and change settings (without a subcommand: print them all)."""
    if ctx.invoked_subcommand is None:
        from meith_core._cli.admin import run_settings_get

        raise typer.Exit(run_settings_get(None))


@settings_app.command("get", epilog=_examples("meith settings get git.activeIdentityProfileId"))
def settings_get(
    key: Annotated[
        str | None, typer.Argument(help="A dotted key; all settings when omitted.")
    ] = None,
) -> None:
    """Print settings, or one (dotted) key."""
    from meith_core._cli.admin import run_settings_get

    raise typer.Exit(run_settings_get(key))


@settings_app.command(
    "set",
    epilog=_examples(
        "meith settings set browser.headless false",
        "meith settings set git '{\"activeIdentityProfileId\": null}'",
    ),
)
def settings_set(
    key: Annotated[str, typer.Argument(help="A dotted key, e.g. git.activeIdentityProfileId.")],
    value: Annotated[
        str, typer.Argument(help="A JSON value (plain text is taken as a string; null removes).")
    ],
) -> None:
    """Set one (dotted) key; sections owned by a plugin are validated."""
    from meith_core._cli.admin import run_settings_set

    raise typer.Exit(run_settings_set(key, value))


from meith_core._cli.mcp import register as _register_mcp  # noqa: E402

_register_mcp(app)  # `meith mcp`, `meith sessions`
