"""`meith audit`: show the audit trail (with interrupted calls) and verify its hash chain.

Only typer is imported at module level (the CLI starts fast); the trail's modules load when a
command runs.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Annotated, Any, Final

import typer

from meith_core.cli.options import JsonOpt

#: `meith audit verify` found the trail broken (a link, a segment or a record).
EXIT_TRAIL_BROKEN: Final = 6
#: `meith audit verify --strict`: the chain is sound, but retention dropped privileged or denied
#: records younger than audit.retentionDays.
EXIT_EVIDENCE_DROPPED: Final = 7

audit_app = typer.Typer(
    help="The audit trail: who called what, the decision and why.",
    no_args_is_help=False,
    rich_markup_mode=None,
)


@audit_app.callback(
    invoke_without_command=True,
    epilog="\b\nExamples:\n  meith audit -n 20\n  meith audit --denied --tool git_commit\n"
    "  meith audit --interrupted\n  meith audit --follow --json\n  meith audit verify",
)
def show(
    ctx: typer.Context,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing new entries.")
    ] = False,
    json_output: JsonOpt = False,
    tool: Annotated[str | None, typer.Option("--tool", help="Only calls of this tool.")] = None,
    denied: Annotated[bool, typer.Option("--denied", help="Only denied calls.")] = False,
    interrupted: Annotated[
        bool,
        typer.Option(
            "--interrupted",
            help="Only privileged calls that started and have no outcome (a crash mid-call).",
        ),
    ] = False,
    limit: Annotated[
        int, typer.Option("-n", "--limit", help="How many of the newest entries.")
    ] = 50,
) -> None:
    """Show the audit trail: who called what, the decision and why. A privileged call that
    started but has no outcome is shown as `interrupted` (`running` while its runtime lives)."""
    if ctx.invoked_subcommand is None:
        raise typer.Exit(run_show(follow, json_output, tool, denied, interrupted, limit))


@audit_app.command(
    "verify",
    epilog="\b\nExamples:\n  meith audit verify\n  meith audit verify --json | jq .head\n  meith audit verify --strict",
)
def verify(
    json_output: JsonOpt = False,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="Also fail (exit 7) when retention removed privileged or denied records "
            "younger than audit.retentionDays.",
        ),
    ] = False,
) -> None:
    """Check the hash chain across all segments; report the first broken link, missing segment
    or truncated record, and privileged records retention removed before their age. Exits 6
    when the trail is broken, 7 with --strict when evidence was dropped early."""
    raise typer.Exit(run_verify(json_output, strict))


# -- implementation ---------------------------------------------------------------------------


def _row(r: dict[str, Any]) -> list[str]:
    from meith_core.cli.output import utc_time

    caller = str(r.get("caller"))
    if r.get("claimedCaller"):
        caller += f" (claimed {r['claimedCaller']})"
    outcome = str(r.get("outcome", ""))
    if r.get("kind") == "coalesced":
        outcome += f" x{r.get('count')}"
    return [
        utc_time(r.get("ts")),
        caller,
        str(r.get("label") or "-"),
        str(r.get("toolName") or r.get("action") or r.get("kind")),
        str(r.get("decision")),
        outcome,
        f"{float(r.get('durationMs') or 0):.1f}ms" if "durationMs" in r else "-",
        clip(str(r.get("reason", "")), REASON_CHARS),
    ]


#: The reason is the last column, cut at a word to about this many characters (`--json` has it
#: whole).
REASON_CHARS: Final = 90
_HEADER: Final = [
    "TIME (UTC)",
    "CALLER",
    "AGENT",
    "TOOL",
    "DECISION",
    "OUTCOME",
    "DURATION",
    "REASON",
]


def clip(text: str, width: int) -> str:
    """`text` in at most `width` characters, cut after a whole word and marked with `…`; a
    single word longer than half the width is cut where it must be."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[: width - 1]
    space = cut.rfind(" ")
    if space > width // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:(") + "…"


#: Records about the trail itself, shown as they are.
_TRAIL_KINDS: Final = ("torn-tail", "retention")


def run_show(
    follow: bool, as_json: bool, tool: str | None, denied: bool, interrupted: bool, limit: int
) -> int:
    from meith_core.audit.follow import Follower, collect
    from meith_core.audit.log import AuditLog
    from meith_core.base.home import MeithHome
    from meith_core.base.instances import live_instances
    from meith_core.cli.output import EXIT_OK, printable, table

    home = MeithHome.from_env().ensure()
    log = AuditLog(home.audit_path)

    def keep(r: dict[str, Any]) -> bool:
        return (
            (tool is None or r.get("toolName") == tool)
            and (not denied or r.get("decision") == "deny")
            and (not interrupted or r.get("outcome") in ("interrupted", "running"))
        )

    def emit(records: list[dict[str, Any]], header: bool) -> None:
        if as_json:
            for r in records:
                sys.stdout.write(json.dumps(r, ensure_ascii=False) + "\n")
        elif records:
            if header:
                table([_row(r) for r in records], _HEADER)
            else:
                for r in records:
                    sys.stdout.write("  ".join(printable(c) for c in _row(r)) + "\n")
        sys.stdout.flush()

    live = {r.pid for r in live_instances(home)}
    # Opened first, at the end: what is written while the trail is read shows up in the
    # follow (seen ids are skipped once), not in neither.
    follower = Follower(log.path) if follow else None
    records = collect(log.read(), limit, keep, live)
    if not records and not follow and not as_json:
        filtered = tool or denied or interrupted
        sys.stdout.write("No audit entries" + (" match." if filtered else " yet.") + "\n")
    emit(records, header=True)
    if not follow:
        return EXIT_OK
    assert follower is not None
    shown = {r.get("id") for r in records}
    try:
        while True:
            time.sleep(0.5)
            # Intents are left out: the outcome record of the call follows.
            fresh = [
                r
                for r in follower.new_records()
                if r.get("kind") != "intent" and keep(r) and r.get("id") not in shown
            ]
            shown.clear()
            emit(fresh, header=False)
    except KeyboardInterrupt:
        return EXIT_OK
    finally:
        follower.close()


def run_verify(as_json: bool, strict: bool = False) -> int:
    from meith_core.audit.verify import verify as verify_trail
    from meith_core.base.home import MeithHome
    from meith_core.cli.output import EXIT_OK, pretty

    report = verify_trail(MeithHome.from_env().ensure().audit_path)
    if as_json:
        sys.stdout.write(pretty(report.to_json()) + "\n")
    else:
        files = report.files
        span = f"{files[0]} .. {files[-1]}" if len(files) > 1 else (files[0] if files else "-")
        if report.ok:
            sys.stdout.write(
                f"Audit trail OK: {report.records} records in {len(files)} file(s) ({span}).\n"
                f"Head: {report.head or '-'}\n"
            )
        else:
            first = report.problems[0]
            where = first["file"] + (f":{first['line']}" if first["line"] else "")
            more = len(report.problems) - 1
            sys.stdout.write(
                f"Audit trail BROKEN at {where}: {first['problem']}"
                + (f" ({more} more problem(s); --json lists them)" if more else "")
                + "\n"
            )
        if report.evidence_dropped:
            sys.stdout.write(
                f"Evidence dropped: retention removed {report.evidence_dropped} privileged or "
                "denied record(s) younger than audit.retentionDays; raise audit.maxBytes "
                "(meith settings set audit.maxBytes N)\n"
            )
        for note in report.notes:
            sys.stdout.write(f"  note: {note}\n")
    if not report.ok:
        return EXIT_TRAIL_BROKEN
    return EXIT_EVIDENCE_DROPPED if strict and report.evidence_dropped else EXIT_OK
