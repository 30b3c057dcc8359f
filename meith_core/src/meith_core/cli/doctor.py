"""`meith doctor`: the installation checked; with `--walls`, every attack of the escape corpus
tried against this host's walls in a runtime of the doctor's own.

Only typer is imported at module level (the CLI starts fast); the checks load when it runs.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Annotated, Final

import typer

from meith_core.cli.options import JsonOpt, examples

#: `--walls`: some entry was breached (the exit code of any failed check otherwise).
EXIT_BREACHED: Final = 1
#: The lab could not be set up (its runtime did not start).
EXIT_NO_LAB: Final = 2


def register(app: typer.Typer) -> None:
    @app.command(
        epilog=examples(
            "meith doctor",
            "meith doctor --walls",
            "meith doctor --walls --only network --only unix-sockets",
            "meith doctor --walls --json | jq '.entries[] | select(.result == \"breached\")'",
        )
    )
    def doctor(
        walls: Annotated[
            bool,
            typer.Option(
                "--walls",
                help="Run the escape corpus: every attack ever found, against a runtime of "
                "the doctor's own on this host (a minute or two); print the score card. Exits "
                "1 when a wall was breached.",
            ),
        ] = False,
        only: Annotated[
            list[str] | None,
            typer.Option(
                "--only",
                metavar="ID|WALL",
                help="With --walls: only this entry id or wall (repeat).",
            ),
        ] = None,
        list_entries: Annotated[
            bool, typer.Option("--list", help="List the corpus's entries; run nothing.")
        ] = False,
        markdown: Annotated[
            bool, typer.Option("--markdown", help="With --walls: the card as Markdown.")
        ] = False,
        schema: Annotated[
            bool, typer.Option("--schema", help="Print the JSON schema of --walls --json.")
        ] = False,
        verbose: Annotated[
            bool, typer.Option("--verbose", "-v", help="The held entries' evidence too.")
        ] = False,
        json_output: JsonOpt = False,
    ) -> None:
        """Check meith's installation (versions, plugins and approvals, Chromium, ripgrep,
        git, the kernel's walls, the audit trail, MCP client configurations); with --walls,
        try every known attack against this host's walls."""
        if schema:
            from meith_core.doctor.schema import CARD_SCHEMA

            sys.stdout.write(json.dumps(CARD_SCHEMA, indent=2) + "\n")
            raise typer.Exit(0)
        if list_entries:
            raise typer.Exit(run_list(only or [], json_output))
        if walls or only or markdown:
            raise typer.Exit(run_walls(only or [], json_output, markdown, verbose))
        raise typer.Exit(run_install(json_output))


def run_install(as_json: bool) -> int:
    from meith_core.doctor.install import document, run_checks, text

    checks = run_checks()
    sys.stdout.write(json.dumps(document(checks), indent=2) + "\n" if as_json else text(checks))
    return 1 if any(c.status == "fail" for c in checks) else 0


def run_list(only: list[str], as_json: bool) -> int:
    from meith_core.cli.output import EXIT_USAGE, fail
    from meith_core.doctor.corpus import entries, select

    try:
        chosen = select(entries(), only)
    except ValueError as exc:
        return fail(str(exc), EXIT_USAGE)
    if as_json:
        rows = [
            {"id": e.id, "wall": e.wall, "attack": e.attack, "assertion": e.assertion}
            for e in chosen
        ]
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
    else:
        for e in chosen:
            sys.stdout.write(f"{e.id:<36} {e.wall:<14} {e.attack}\n")
    return 0


def run_walls(only: list[str], as_json: bool, markdown: bool, verbose: bool) -> int:
    from meith_core.cli.output import EXIT_USAGE, fail
    from meith_core.doctor import card
    from meith_core.doctor.corpus import entries, select
    from meith_core.doctor.lab import Lab
    from meith_core.doctor.progress import Progress
    from meith_core.doctor.runner import run_corpus
    from meith_core.doctor.served import LabError

    try:
        chosen = select(entries(), only)
    except ValueError as exc:
        return fail(str(exc), EXIT_USAGE)
    progress = Progress(len(chosen), sys.stderr)
    progress.starting()
    start = time.monotonic()
    try:
        with Lab.open() as lab:
            results = run_corpus(lab, chosen, progress)
            doc = card.document(
                results, lab.status, lab.plugins, time.monotonic() - start, lab.env.get("PATH")
            )
    except LabError as exc:
        progress.close()
        return fail(f"meith doctor could not start its own runtime: {exc}", EXIT_NO_LAB)
    finally:
        progress.close()
    if as_json:
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    elif markdown:
        sys.stdout.write(card.markdown(doc))
    else:
        sys.stdout.write(card.text(doc, verbose=verbose))
    return card.exit_code(doc)
