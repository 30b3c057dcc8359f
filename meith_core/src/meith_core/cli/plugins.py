"""`meith plugins`: list the plugins of the running runtime (or those installed here), approve
or revoke their capabilities, have the runtime load new ones, and the plugin author's `new`
and `check`.

Only typer is imported at module level (the CLI starts fast); the plugin machinery loads when a
command runs.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from meith_core.base.home import MeithHome
from meith_core.cli.options import JsonOpt, examples
from meith_core.cli.output import (
    EXIT_OK,
    EXIT_TOOL_FAILED,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    fail,
    pretty,
    utc_time,
)

plugins_app = typer.Typer(
    help="List discovered plugins; approve or revoke their capabilities.",
    no_args_is_help=False,
    rich_markup_mode=None,
)


@plugins_app.callback(
    invoke_without_command=True, epilog=examples("meith plugins --json", "meith plugins -v")
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
        raise typer.Exit(run_plugins_list(json_output, verbose))


@plugins_app.command(
    "approve",
    epilog=examples(
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
    raise typer.Exit(run_plugins_approve(plugin_id, capabilities or []))


@plugins_app.command("reload", epilog=examples("meith plugins reload"))
def plugins_reload() -> None:
    """Have the running runtime load plugins installed since it started (it also notices them
    by itself when tools or plugins are listed), and retry those that failed to load."""
    raise typer.Exit(run_plugins_reload())


@plugins_app.command(
    "new", epilog=examples("meith plugins new weather", "meith plugins new weather --dir ~/src/w")
)
def plugins_new(
    name: Annotated[str, typer.Argument(help="The plugin id, e.g. weather (lowercase).")],
    directory: Annotated[
        str | None,
        typer.Option("--dir", help="Where to write it (default: ./meith-NAME; must be empty)."),
    ] = None,
) -> None:
    """Write a complete, tested plugin distribution to start from."""
    raise typer.Exit(run_plugins_new(name, directory))


@plugins_app.command(
    "check",
    epilog=examples("meith plugins check", "meith plugins check git", "meith plugins check ."),
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
    raise typer.Exit(run_plugins_check(target, json_output))


@plugins_app.command("revoke", epilog=examples("meith plugins revoke browser"))
def plugins_revoke(plugin_id: Annotated[str, typer.Argument(help="The plugin id.")]) -> None:
    """Withdraw a plugin's approval; its privileged tools stop working at once."""
    raise typer.Exit(run_plugins_revoke(plugin_id))


# -- implementation ---------------------------------------------------------------------------


def _ask_runtime(tool: str) -> tuple[Any, str] | None:
    """`tool`'s content from the running runtime and words naming that runtime; None when no
    runtime is reachable (or it cannot answer)."""
    from meith_core.client import Client
    from meith_core.client._core import TransportError

    try:
        with Client(home=MeithHome.from_env().ensure(), connect_timeout=2.0) as client:
            result = client.call(tool, {}, timeout_ms=60_000)
            instance = client.target.instance
    except (TransportError, OSError):
        return None
    if not result.ok:
        return None
    where = f"pid {instance.pid}" if instance is not None else client.socket_path
    return result.content, where


def run_plugins_list(as_json: bool, verbose: bool = False) -> int:
    from meith_core.host.plugins.listing import loaded_runtime, runtime_listing

    # What the running runtime has loaded is what its tools are; the environment may differ
    # (a plugin installed since, a MEITH_PLUGINS of its own).
    running = _ask_runtime("list_plugins")
    if running is not None:
        listing, where = running
        if not as_json:
            sys.stdout.write(f"Plugins of the running meith runtime ({where}):\n")
    else:
        sys.stderr.write(
            "No meith runtime is running: these are the plugins installed here, which a "
            "runtime started now would load.\n"
        )
        listing = runtime_listing(loaded_runtime())
    if as_json:
        sys.stdout.write(pretty(listing) + "\n")
        return EXIT_OK
    for p in listing:
        dist = f"{p['distribution']} {p['version']}" if p["distribution"] else "-"
        status = p["status"] + (f": {p['reason']}" if p["reason"] else "")
        sys.stdout.write(f"{p['id']}  ({dist})  {status}\n")
        if p.get("installedVersion"):
            sys.stdout.write(
                f"    installed: {p['installedVersion']} (restart the runtime to load it; it "
                "must then be approved again)\n"
            )
        if verbose and p["traceback"]:
            sys.stdout.write("    " + p["traceback"].rstrip().replace("\n", "\n    ") + "\n")
        if verbose and p["importMs"] is not None:
            sys.stdout.write(f"    import:    {p['importMs']} ms\n")
        if p["tools"]:
            sys.stdout.write(f"    tools:     {', '.join(t['name'] for t in p['tools'])}\n")
            sys.stdout.write(f"    requests:  {', '.join(p['requestedCapabilities'])}\n")
        approval = p["approval"]
        if approval is None:
            state = "not approved" + (
                f"  (run: meith plugins approve {p['id']})" if p["status"] == "loaded" else ""
            )
        elif approval.get("implicit"):
            state = "approved (part of meith)"
        elif not approval["valid"]:
            state = f"VOID: the plugin changed since it was approved (run: meith plugins approve {p['id']})"
        else:
            state = f"approved: {', '.join(approval['capabilities']) or 'nothing'} (since {utc_time(approval['approvedAt'])} UTC)"
        sys.stdout.write(f"    approval:  {state}\n")
        for change in (approval or {}).get("changes") or ():
            sys.stdout.write(f"    changed:   {change}\n")
        for check in p["health"]:
            if check["status"] != "ok":
                sys.stdout.write(f"    {check['status']}:{' ' * (10 - len(check['status']))}")
                sys.stdout.write(f"{check['message'] or check['name']}\n")
    return EXIT_OK


def run_plugins_approve(plugin_id: str, capabilities: list[str]) -> int:
    from meith_core.host.plugins.listing import loaded_runtime
    from meith_core.host.trust_edits import UnauditedChange
    from meith_core.protocol.capabilities import parse_capabilities

    try:
        wanted = parse_capabilities(capabilities)
    except ValueError as exc:
        return fail(str(exc), EXIT_USAGE)
    runtime = loaded_runtime()
    record = runtime.plugins.records.get(plugin_id)
    if record is None:
        known = ", ".join(sorted(runtime.plugins.records)) or "none"
        return fail(f"No plugin {plugin_id!r} is installed (installed: {known}).", EXIT_USAGE)
    if record.status != "loaded":
        return fail(
            f"Plugin {plugin_id} cannot be approved: it is {record.status} ({record.reason}).",
            EXIT_TOOL_FAILED,
        )
    requested = set(record.requested_capabilities)
    ignored = [c.value for c in wanted if c not in requested]
    if ignored:
        sys.stderr.write(f"note: {plugin_id} does not request {', '.join(ignored)}; ignored\n")
    try:
        runtime.approve_plugin(
            plugin_id,
            [c.value for c in wanted] if wanted else None,
            by="the local user (meith plugins approve)",
        )
    except UnauditedChange as exc:
        return fail(str(exc), EXIT_TOOL_FAILED)
    approval = runtime.permissions.plugin_approvals.get(plugin_id)
    caps = ", ".join(c.value for c in approval.capabilities) if approval else ""
    sys.stdout.write(f"Approved {plugin_id} {record.version or ''} for: {caps or 'nothing'}\n")
    return EXIT_OK


def run_plugins_reload() -> int:
    running = _ask_runtime("reload_plugins")
    if running is None:
        return fail(
            "No meith runtime is running; one started now loads every installed plugin.",
            EXIT_UNREACHABLE,
        )
    new, where = running
    if not new:
        sys.stdout.write(f"No new plugins: the runtime ({where}) has loaded every installed one.\n")
    for p in new:
        dist = f"{p['distribution']} {p['version']}" if p["distribution"] else "-"
        status = p["status"] + (f": {p['reason']}" if p["reason"] else "")
        tools = ", ".join(t["name"] for t in p["tools"]) or "no tools"
        sys.stdout.write(f"{p['id']}  ({dist})  {status}  [{tools}]\n")
    return EXIT_OK


def run_plugins_revoke(plugin_id: str) -> int:
    from meith_core.host.trust_edits import TrustEditor, UnauditedChange

    editor = TrustEditor(MeithHome.from_env().ensure(), "the local user (meith plugins revoke)")
    try:
        revoked = editor.revoke_plugin(plugin_id) is not None
    except UnauditedChange as exc:  # revoked all the same
        sys.stderr.write(f"warning: {exc}\n")
        revoked = True
    if revoked:
        sys.stdout.write(f"Revoked the approval of {plugin_id}.\n")
        return EXIT_OK
    return fail(f"Plugin {plugin_id} had no approval.", EXIT_TOOL_FAILED)


def run_plugins_new(name: str, directory: str | None) -> int:
    from meith_core.host.plugins.scaffold import ScaffoldError, meith_environment, scaffold

    try:
        names, target, files = scaffold(name, Path(directory) if directory else None)
    except ScaffoldError as exc:
        return fail(str(exc), EXIT_USAGE)
    shown = os.path.relpath(target) if not os.path.isabs(directory or "") else str(target)
    env = meith_environment()
    # meith-core is not on PyPI: the plugin is installed in meith's own environment, where its
    # dependency on meith-core is already met; its test tools go in a venv of its own.
    activate = (
        f"  . {env / 'bin' / 'activate'}   # meith's environment, which has meith-core (not on PyPI)\n"
        if env is not None and os.environ.get("VIRTUAL_ENV") != str(env)
        else ""
    )
    sys.stdout.write(
        f"Created plugin {names.id!r} (distribution {names.distribution}) in {shown}: "
        f"{len(files)} files.\n\nNext:\n"
        f"{activate}"
        f"  cd {shown}\n"
        "  python3 -m venv .venv && .venv/bin/pip install -r dev-requirements.txt\n"
        "  .venv/bin/pytest                       # its own environment: the tests pass as generated\n"
        "  meith plugins check .                  # what to fix before publishing\n"
        f"  pip install . && meith plugins         # into meith's: {names.id} is listed; then\n"
        f"  meith plugins approve {names.id} && meith call {names.id}_count_lines --path README.md\n"
    )
    return EXIT_OK


def run_plugins_check(target: str | None, as_json: bool) -> int:
    import logging

    import structlog

    from meith_core.host.plugins.check import check_installed, check_project

    # Load failures are reported below, with their reason; the log would only repeat them.
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
    )
    if target is not None and (os.sep in target or target.startswith(".") or Path(target).is_dir()):
        if not Path(target).is_dir():
            return fail(f"{target} is not a directory", EXIT_USAGE)
        reports = check_project(Path(target))
    else:
        reports = check_installed(None if target is None else [target])
    if as_json:
        sys.stdout.write(json.dumps([r.as_json() for r in reports], indent=2) + "\n")
    else:
        for report in reports:
            dist = f"{report.distribution} {report.version}" if report.distribution else "?"
            timing = f", import {report.import_ms:.0f} ms" if report.import_ms is not None else ""
            verdict = "ok" if report.ok else "FAILED"
            sys.stdout.write(
                f"{report.plugin} ({dist}): {verdict} - {len(report.tools)} tools{timing}\n"
            )
            for level, message in report.problems:
                sys.stdout.write(f"  {level}: {message}\n")
        errors = sum(1 for r in reports for lv, _ in r.problems if lv == "error")
        warnings = sum(1 for r in reports for lv, _ in r.problems if lv == "warning")
        sys.stdout.write(
            f"checked {len(reports)} plugin{'s' if len(reports) != 1 else ''}: "
            f"{errors} error{'s' if errors != 1 else ''}, "
            f"{warnings} warning{'s' if warnings != 1 else ''}\n"
        )
    return EXIT_OK if reports and all(r.ok for r in reports) else EXIT_TOOL_FAILED
