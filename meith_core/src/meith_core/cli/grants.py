"""`meith grants`: the standing grants in $MEITH_HOME/grants.json, listed, added and revoked.

They are part of the trust root: edited here by the local user, never through the socket; a
running runtime picks up the changed file without a restart.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated

import typer

from meith_core.base.home import MeithHome
from meith_core.cli.options import JsonOpt, examples
from meith_core.cli.output import (
    EXIT_OK,
    EXIT_TOOL_FAILED,
    EXIT_USAGE,
    fail,
    pretty,
    table,
    utc_time,
)

if TYPE_CHECKING:
    from meith_core.host.trust_edits import TrustEditor
    from meith_core.protocol.capabilities import Capability

grants_app = typer.Typer(
    help="Standing grants: privileged capabilities for every cli or agent session.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@grants_app.command("list", epilog=examples("meith grants list --json"))
def grants_list(json_output: JsonOpt = False) -> None:
    """Show the standing grants."""
    raise typer.Exit(run_grants_list(json_output))


@grants_app.command(
    "add",
    epilog=examples(
        "meith grants add --caller cli --capability writes-files --tool git_commit --cwd ~/src/app",
        "meith grants add --caller agent --capability starts-process --expires 1h",
        "meith grants add --caller agent --agent claude-code --capability writes-files --uses 5",
        "meith grants add --caller agent -c starts-process --cwd ~/src/app --net pypi.org,*.pythonhosted.org",
        "meith grants add --caller agent -c starts-process --cwd ~/src/app --socket /run/postgresql/.s.PGSQL.5432",
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
    net: Annotated[
        list[str] | None,
        typer.Option(
            "--net",
            help="With --cwd: network destinations processes started under the grant may "
            "reach, HOST[:PORT] or *.DOMAIN[:PORT], comma-separated or repeated, or 'any'. "
            "Without it they have no network beyond themselves.",
        ),
    ] = None,
    socket: Annotated[
        list[str] | None,
        typer.Option(
            "--socket",
            help="With --cwd: a Unix socket (absolute path, repeatable) processes started "
            "under the grant may reach, such as a project's database. Without it they reach "
            "none of the user's sockets (tmux, ssh-agent, the session bus, docker).",
        ),
    ] = None,
    json_output: JsonOpt = False,
) -> None:
    """Add a standing grant; running runtimes pick it up without a restart."""
    raise typer.Exit(
        run_grants_add(
            caller, capability, tool, cwd, expires, uses, json_output, agent, net, socket
        )
    )


@grants_app.command("revoke", epilog=examples("meith grants revoke g_1a2b3c4d5e6f"))
def grants_revoke(
    grant_id: Annotated[str, typer.Argument(help="The grant id (see meith grants list).")],
) -> None:
    """Remove a standing grant."""
    raise typer.Exit(run_grants_revoke(grant_id))


# -- implementation ---------------------------------------------------------------------------


def run_grants_list(as_json: bool) -> int:
    from meith_core.policy.grants import StandingGrants

    store = StandingGrants(MeithHome.from_env().ensure().grants_path)
    grants = store.current()
    if store.load_error:
        sys.stderr.write(f"warning: {store.load_error}\n")
    if as_json:
        sys.stdout.write(pretty([g.to_json() for g in grants]) + "\n")
        return EXIT_OK
    if not grants:
        sys.stdout.write(
            "No standing grants. Add one with: meith grants add --caller cli --capability writes-files\n"
        )
        return EXIT_OK
    now = time.time_ns() // 1_000_000
    rows = []
    for g in grants:
        expiry = (
            "never"
            if g.expires_at is None
            else (utc_time(g.expires_at) + (" (expired)" if g.expired(now) else ""))
        )
        rows.append(
            [
                g.id,
                g.caller.value + (f" ({g.agent})" if g.agent else ""),
                ",".join(c.value for c in g.capabilities),
                g.tool or "*",
                g.cwd_prefix or "*",
                (",".join(g.net) or "none") if g.cwd_prefix else "*",
                str(g.uses) if g.uses else "∞",
                expiry,
            ]
        )
    table(rows, ["ID", "CALLER", "CAPABILITIES", "TOOL", "CWD", "NET", "USES", "EXPIRES"])
    return EXIT_OK


def run_grants_add(
    caller: str,
    capabilities: list[str],
    tool: str | None,
    cwd: str | None,
    expires: str | None,
    uses: int | None,
    as_json: bool,
    agent: str | None = None,
    net: list[str] | None = None,
    sockets: list[str] | None = None,
) -> int:
    from meith_core.host.trust_edits import UnauditedChange, describe_grant
    from meith_core.policy.grants import standing_grant

    try:
        grant = standing_grant(
            caller,
            capabilities,
            tool=tool,
            cwd=cwd,
            expires=expires,
            uses=uses,
            agent=agent,
            net=net or (),
            sockets=sockets or (),
        )
    except ValueError as exc:
        return fail(str(exc), EXIT_USAGE)
    try:
        _editor("meith grants add").add_grant(grant)
    except UnauditedChange as exc:
        return fail(str(exc), EXIT_TOOL_FAILED)
    _confinement_note(grant.cwd_prefix, grant.capabilities)
    if as_json:
        sys.stdout.write(pretty(grant.to_json()) + "\n")
    else:
        until = f" until {utc_time(grant.expires_at)} UTC" if grant.expires_at else ""
        sys.stdout.write(f"Added {grant.id}: {describe_grant(grant)}{until}\n")
    return EXIT_OK


def _editor(command: str) -> TrustEditor:
    """The trust root as the local user at the CLI changes it (each change audited)."""
    from meith_core.host.trust_edits import TrustEditor

    return TrustEditor(MeithHome.from_env().ensure(), f"the local user ({command})")


def _confinement_note(prefix: str | None, caps: Iterable[Capability]) -> None:
    """A directory-confined starts-process grant confines only where the kernel can enforce it."""
    from meith_core.confine.status import landlock_status
    from meith_core.protocol.capabilities import Capability as Cap

    if prefix is None or Cap.STARTS_PROCESS not in caps:
        return
    status = landlock_status()
    if status.available:
        sys.stderr.write(f"Confinement: {status.describe()}.\n")
        for wall in status.missing():
            sys.stderr.write(f"warning: wall missing here: {wall.name}: {wall.fix}\n")
    else:
        sys.stderr.write(
            f"warning: {status.describe()}. This grant lets processes started in {prefix} do "
            "anything you can do.\n"
        )


def run_grants_revoke(grant_id: str) -> int:
    from meith_core.host.trust_edits import UnauditedChange

    try:
        revoked = _editor("meith grants revoke").revoke_grant(grant_id) is not None
    except UnauditedChange as exc:  # revoked all the same
        sys.stderr.write(f"warning: {exc}\n")
        revoked = True
    if revoked:
        sys.stdout.write(f"Revoked {grant_id}.\n")
        return EXIT_OK
    return fail(f"No standing grant {grant_id} (see meith grants list).", EXIT_TOOL_FAILED)
