"""The score card of a `meith doctor --walls` run: the JSON document (`--json`, its schema in
`doctor.schema`), and the same as text for a terminal and as Markdown for the docs."""

from __future__ import annotations

import os
import platform
import shutil
from collections.abc import Iterable, Mapping
from typing import Any, Final

from meith_core._version import __version__
from meith_core.doctor.corpus import WALLS
from meith_core.doctor.runner import Result

VERDICTS: Final = ("held", "breached", "skipped")
#: Programs entries may need, reported in the card's host section.
PROGRAMS: Final = ("git", "cc", "tmux", "ssh-agent", "ssh-add", "ssh-keygen")


def document(
    results: Iterable[Result],
    status: Mapping[str, Any],
    plugins: Iterable[str],
    seconds: float,
    path: str | None = None,
) -> dict[str, Any]:
    """The card as JSON: the host, each entry's verdict, and the counts."""
    entries = [r.to_json() for r in results]
    summary = {v: sum(1 for e in entries if e["result"] == v) for v in VERDICTS}
    by_wall = {
        wall: {
            v: sum(1 for e in entries if e["wall"] == wall and e["result"] == v) for v in VERDICTS
        }
        for wall in WALLS
        if any(e["wall"] == wall for e in entries)
    }
    return {
        "host": {
            "meith": __version__,
            "python": platform.python_version(),
            "system": f"{platform.system()} {platform.release()}",
            "machine": platform.machine(),
            "root": os.geteuid() == 0,
            "confinement": {
                "landlockAbi": int(status.get("abi", 0) or 0),
                "namespaces": bool(status.get("namespaces", False)),
                "walls": [dict(w) for w in status.get("walls", ())],
            },
            "plugins": sorted(plugins),
            "programs": {p: shutil.which(p, path=path) for p in PROGRAMS},
            "seconds": round(seconds, 1),
        },
        "entries": entries,
        "walls": by_wall,
        "summary": summary,
    }


def missing_walls(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [w for w in doc["host"]["confinement"]["walls"] if not w.get("built")]


def _host_line(doc: Mapping[str, Any]) -> str:
    host = doc["host"]
    confinement = host["confinement"]
    abi = confinement["landlockAbi"]
    kernel = f"Landlock ABI {abi}" if abi else "no Landlock"
    ns = "user namespaces" if confinement["namespaces"] else "no user namespaces"
    return (
        f"meith {host['meith']}, Python {host['python']}, {host['system']} ({host['machine']}); "
        f"{kernel}, {ns}; plugins: {', '.join(host['plugins']) or 'none'}"
    )


def text(doc: Mapping[str, Any], *, verbose: bool = False) -> str:
    """The card for a terminal: the host, the walls it lacks with their fixes, a line per
    wall, then every breached and skipped entry with why (and with `verbose`, the held)."""
    out = [f"meith doctor --walls: {_host_line(doc)}"]
    missing = missing_walls(doc)
    if missing:
        out.append("Walls this host does not build (entries that need them are skipped):")
        out += [f"  - {w['wall']}: fix: {w.get('fix', '')}" for w in missing]
    elif doc["host"]["confinement"]["walls"]:
        out.append("Every wall of confine/status is built on this host.")
    out.append("")
    out.append(f"{'WALL':<15} {'HELD':>5} {'BREACHED':>9} {'SKIPPED':>8}")
    for wall, counts in doc["walls"].items():
        out.append(f"{wall:<15} {counts['held']:>5} {counts['breached']:>9} {counts['skipped']:>8}")
    entries = doc["entries"]
    for verdict, title in (
        ("breached", "BREACHED: the wall did not hold on this host"),
        ("skipped", "SKIPPED"),
        *((("held", "HELD"),) if verbose else ()),
    ):
        chosen = [e for e in entries if e["result"] == verdict]
        if not chosen:
            continue
        out += ["", title]
        for e in chosen:
            out.append(f"  {e['id']} ({e['wall']})")
            if verdict != "skipped":
                out.append(f"      attack: {e['attack']}")
            out.append(f"      {'evidence' if verdict != 'skipped' else 'why'}: {e['why']}")
    s = doc["summary"]
    out += [
        "",
        f"{len(entries)} entries in {doc['host']['seconds']:.0f} s: {s['held']} held, "
        f"{s['breached']} breached, {s['skipped']} skipped.",
    ]
    return "\n".join(out) + "\n"


def markdown(doc: Mapping[str, Any]) -> str:
    """The card as a Markdown page (docs/walls-card.md): the host, the walls, and one row per
    entry with its verdict; a skip says why, evidence (run-specific) is left to `--json`."""
    out = [
        "# The walls card",
        "",
        "<!-- Written by `nox -s walls_card` (meith doctor --walls --markdown); do not edit. -->",
        "",
        "`meith doctor --walls` run on the machine CI runs on: every entry of the escape corpus "
        "against a runtime of its own. How to read it and how to add an entry: "
        "[The escape corpus](security-walls.md#the-escape-corpus-and-meith-doctor).",
        "",
        f"Host: {_host_line(doc)}.",
        "",
    ]
    missing = missing_walls(doc)
    if missing:
        out.append("Walls this host does not build:")
        out.append("")
        out += [f"- `{w['wall']}`: fix: {w.get('fix', '')}" for w in missing]
    else:
        out.append("Every wall of `confine/status.py` is built on this host.")
    out += ["", "| Wall | Held | Breached | Skipped |", "|---|---:|---:|---:|"]
    for wall, counts in doc["walls"].items():
        out.append(f"| {wall} | {counts['held']} | {counts['breached']} | {counts['skipped']} |")
    out += ["", "| Entry | Wall | Result | Attack |", "|---|---|---|---|"]
    for e in doc["entries"]:
        result = e["result"] if e["result"] != "skipped" else f"skipped: {e['why']}"
        attack = e["attack"].replace("|", "\\|")
        out.append(f"| `{e['id']}` | {e['wall']} | {result} | {attack} |")
    s = doc["summary"]
    out += [
        "",
        f"{len(doc['entries'])} entries: {s['held']} held, {s['breached']} breached, "
        f"{s['skipped']} skipped.",
    ]
    return "\n".join(out) + "\n"


def exit_code(doc: Mapping[str, Any]) -> int:
    """0 when nothing was breached, else 1 (skips are not failures: they say why)."""
    return 1 if doc["summary"]["breached"] else 0


__all__ = ["VERDICTS", "document", "exit_code", "markdown", "missing_walls", "text"]
