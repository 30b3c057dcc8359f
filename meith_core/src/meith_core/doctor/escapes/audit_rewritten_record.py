"""A record of the audit trail is rewritten after the fact (who called, what was decided)."""

from __future__ import annotations

import shutil
from pathlib import Path

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab

FORGED = "forged by meith doctor"


def _copy(lab: Lab) -> Path:
    """A copy of the lab's trail with its first record's reason rewritten."""
    lab.runtime.content("app_health")  # a record at least, whatever ran before
    copy = lab.dir("trail", outside=True)
    for segment in lab.runtime.home.root.glob("audit*.jsonl*"):
        shutil.copy2(segment, copy / segment.name)
    trail = copy / "audit.jsonl"
    lines = trail.read_text().splitlines()
    lines[0] = lines[0].replace('"reason":"', f'"reason":"{FORGED} ', 1)
    trail.write_text("\n".join(lines) + "\n")
    return trail


def _plain(lab: Lab) -> Seen:
    with open(_copy(lab)) as fh:
        first = fh.readline()
    return Seen(FORGED in first, "the rewritten record reads as the forger wrote it")


def _verified(lab: Lab) -> Seen:
    from meith_core.audit.verify import verify

    report = verify(_copy(lab))
    problem = report.problems[0]["problem"] if report.problems else "none"
    return Seen(report.ok, f"meith audit verify: {'OK' if report.ok else 'BROKEN'} ({problem})")


ENTRY = Entry(
    id="audit-rewritten-record",
    wall="audit",
    attack="Someone rewrites the reason of a record in a copy of the trail, in place.",
    assertion="`meith audit verify` reports the trail broken at that record",
    control=_plain,
    trick=_verified,
    needs=Needs(),
)
