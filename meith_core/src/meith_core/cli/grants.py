"""`meith grants`: the standing grants in $MEITH_HOME/grants.json, listed, added, revoked, and
which of them a described call would use (`explain`).

They are part of the trust root: edited here by the local user, never through the socket; a
running runtime picks up the changed file without a restart.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated, Final

import typer

from meith_core.base.home import MeithHome
from meith_core.base.suggest import not_one_of
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

#: The caller kinds a standing grant is for (plugins are governed by their approvals).
GRANTED_CALLERS: Final = ("cli", "agent")

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
        "meith grants add --caller agent --read ~/src/shared-lib",
        "meith grants add --caller agent --agent auditor -c read-only --tool get_audit_log",
        "meith grants add --caller agent -c starts-process --cwd ~/src/app --socket /run/postgresql/.s.PGSQL.5432",
    ),
)
def grants_add(
    capability: Annotated[
        list[str] | None,
        typer.Option(
            "--capability",
            "-c",
            help="A privileged capability (repeat for several); read-only with a directory "
            "(see --read), or with --tool get_audit_log: every session's audit records and "
            "sessions for an agent.",
        ),
    ] = None,
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
    read: Annotated[
        str | None,
        typer.Option(
            "--read",
            help="Agents may read in this directory, beyond their workspace (the same as "
            "--capability read-only --cwd DIR).",
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
    if caller not in GRANTED_CALLERS:
        raise typer.BadParameter(not_one_of(caller, GRANTED_CALLERS), param_hint="--caller")
    capabilities = list(capability or [])
    if read is not None:
        if cwd is not None and cwd != read:
            raise typer.BadParameter("--read DIR is a grant in DIR: give --cwd only as DIR")
        capabilities.append("read-only")
        cwd = read
    if not capabilities:
        raise typer.BadParameter(
            "name a capability (--capability CAP) or a directory to read (--read DIR)",
            param_hint="--capability",
        )
    raise typer.Exit(
        run_grants_add(
            caller, capabilities, tool, cwd, expires, uses, json_output, agent, net, socket
        )
    )


@grants_app.command("revoke", epilog=examples("meith grants revoke g_1a2b3c4d5e6f"))
def grants_revoke(
    grant_id: Annotated[str, typer.Argument(help="The grant id (see meith grants list).")],
) -> None:
    """Remove a standing grant."""
    raise typer.Exit(run_grants_revoke(grant_id))


@grants_app.command(
    "explain",
    epilog=examples(
        "meith grants explain --caller agent --agent claude-code --tool run_command --cwd ~/src/app",
        "meith grants explain --caller cli --tool git_commit -c writes-files --cwd . --json",
    ),
)
def grants_explain(
    tool: Annotated[str, typer.Option("--tool", help="The tool the call runs.")],
    caller: Annotated[str, typer.Option("--caller", help="cli or agent.")] = "cli",
    agent: Annotated[
        str | None, typer.Option("--agent", help="The agent's name (the MCP client's name).")
    ] = None,
    cwd: Annotated[
        str | None,
        typer.Option(
            "--cwd",
            help="The directory the call acts on (its cwd argument, or the object's "
            "directory); leave it out for a tool that acts on global state.",
        ),
    ] = None,
    capability: Annotated[
        list[str] | None,
        typer.Option(
            "--capability",
            "-c",
            help="The tool's privileged capabilities (default: asked of the running runtime).",
        ),
    ] = None,
    json_output: JsonOpt = False,
) -> None:
    """Which standing grant a call would use, and why; which others cover it and which not.

    When several grants cover a call the most specific applies: the session's own, then a
    named agent's, one tool's, the deepest directory's; ties go to fewer capabilities, then
    the older grant, then the smaller id.
    """
    raise typer.Exit(run_grants_explain(caller, agent, tool, cwd, capability or [], json_output))


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


def run_grants_explain(
    caller: str,
    agent: str | None,
    tool: str,
    cwd: str | None,
    capabilities: list[str],
    as_json: bool,
) -> int:
    import os

    from meith_core.policy.grant_order import ORDER_TEXT, covering
    from meith_core.policy.grants import StandingGrants
    from meith_core.policy.hints import grant_hint
    from meith_core.protocol.caller import CallerKind
    from meith_core.protocol.capabilities import parse_capabilities, privileged_of

    try:
        kind = CallerKind(caller)
        caps = parse_capabilities(capabilities or _capabilities_of(tool))
    except ValueError as exc:
        return fail(str(exc), EXIT_USAGE)
    wanted = privileged_of(caps)
    directory = os.path.realpath(os.path.expanduser(cwd)) if cwd else None
    who = kind.value + (f" {agent!r}" if agent else "")
    call = {"caller": kind.value, "agent": agent, "tool": tool, "directory": directory}
    if not wanted:
        sys.stdout.write(f"{tool} needs no grant: it declares no privileged capability.\n")
        return EXIT_OK
    home = MeithHome.from_env().ensure()
    store = StandingGrants(home.grants_path)
    matches = covering(
        store.current(),
        kind,
        None,
        label=agent,
        tool=tool,
        wanted=wanted,
        directory=directory,
        now_ms=time.time_ns() // 1_000_000,
    )
    cover = [m for m in matches if m.covers]
    others = [m for m in matches if not m.covers and m.miss != "caller"]
    if as_json:
        explained = {
            "call": {**call, "capabilities": [c.value for c in wanted]},
            "applies": cover[0].to_json() if cover else None,
            "alsoCover": [m.to_json() for m in cover[1:]],
            "doNotCover": [m.to_json() for m in others],
            "order": ORDER_TEXT,
        }
        sys.stdout.write(pretty(explained) + "\n")
        return EXIT_OK
    out = sys.stdout
    where = f"acting on {directory}" if directory else "acting on no directory"
    out.write(f"A call of {tool} by {who} needing {', '.join(c.value for c in wanted)}, {where}:\n")
    if cover:
        first = cover[0]
        out.write(f"  applies: {first.grant.id} ({first.why}){_net(first.grant.net)}\n")
    else:
        hint = grant_hint(home.root, tool, wanted, directory, caller=kind.value, agent=agent)
        out.write(f"  no standing grant covers it; to allow it: {hint}\n")
    for m in cover[1:]:
        out.write(f"  also covers, less specific: {m.grant.id} ({m.why}){_net(m.grant.net)}\n")
    for m in others:
        out.write(f"  does not cover: {m.grant.id} ({m.why})\n")
    out.write(
        f"Order: {ORDER_TEXT}.\nA session's own grants (approved for the session at a prompt) "
        "come first when they cover the call: see meith sessions.\n"
    )
    return EXIT_OK


def _net(net: tuple[str, ...]) -> str:
    return f" --net {','.join(net)}" if net else ""


def _capabilities_of(tool: str) -> list[str]:
    """The tool's capabilities as the running runtime declares them."""
    from meith_core.client import Client, TransportError

    try:
        with Client() as client:
            tools = client.list_tools()
    except TransportError as exc:
        raise ValueError(
            f"no runtime to ask for {tool}'s capabilities ({exc.message}): give them with "
            "--capability"
        ) from None
    found = next((t for t in tools if t.get("name") == tool), None)
    if found is None:
        raise ValueError(f"the running runtime has no tool {tool!r}: give --capability")
    return [str(c) for c in found.get("capabilities") or []]
