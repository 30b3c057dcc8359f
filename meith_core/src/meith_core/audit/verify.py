"""Checking the audit trail: every record's hash, every link to the record before it, no
segment missing that retention did not delete, no record cut short that nobody acknowledged,
no live segment that vanished under a writer (`segment-vanished`, see `segment_identity`).

The chain carries no key: it shows any edit, removal or insertion that does not also rewrite
every later record. Keep the head hash `meith audit verify` prints somewhere else to detect
that too.
"""

from __future__ import annotations

import fcntl
import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from meith_core.audit import segment_identity, segments
from meith_core.audit.chain import check_line

MAX_PROBLEMS: Final = 50


@dataclass(slots=True)
class Report:
    files: list[str] = field(default_factory=list)
    records: int = 0
    legacy_records: int = 0
    head: str | None = None
    problems: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Evidence records carried forward from segments deleted for size (each checked).
    carried: int = 0
    #: Privileged or denied records younger than the retention period that retention dropped
    #: (`--strict` fails on it).
    evidence_dropped: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "files": self.files,
            "records": self.records,
            "legacyRecords": self.legacy_records,
            "head": self.head,
            "firstProblem": self.problems[0] if self.problems else None,
            "problems": self.problems,
            "notes": self.notes,
            "carried": self.carried,
            "evidenceDropped": self.evidence_dropped,
        }


class _Walk:
    def __init__(self, report: Report) -> None:
        self.report = report
        self.head: str | None = None
        self.started = False
        self.first_prev: tuple[str, int] | None = None  # where the first record links outside
        self.torn: tuple[str, int] | None = None
        self.pruned_through = -1

    def problem(self, file: str, line: int | None, text: str) -> None:
        if len(self.report.problems) < MAX_PROBLEMS:
            self.report.problems.append({"file": file, "line": line, "problem": text})

    def line(self, name: str, lineno: int, raw: bytes) -> None:
        checked = check_line(raw)
        record = checked.record
        if record is None:
            if self.torn is not None:
                self.problem(*self.torn, "truncated record")
            self.torn = (name, lineno)
            return
        if not checked.sealed:
            if self.started:
                self.problem(name, lineno, "record without a hash after chained records")
            else:
                self.report.legacy_records += 1
            return
        if checked.error is not None:
            self.problem(name, lineno, checked.error)
        if self.torn is not None:
            if record.get("kind") == "torn-tail":
                self.report.notes.append(
                    f"{self.torn[0]}:{self.torn[1]}: a record cut short by a crash, "
                    "acknowledged by the next runtime"
                )
            else:
                self.problem(*self.torn, "truncated record")
            self.torn = None
        # A vanished segment's record links to the last record the lost segment held: the
        # loss is the problem, said in its own words rather than as a broken link.
        vanished = record.get("kind") == segment_identity.KIND
        if vanished:
            self.problem(name, lineno, segment_identity.describe(record))
        if not self.started:
            self.started = True
            if checked.prev is not None and not vanished:
                self.first_prev = (name, lineno)
        elif checked.prev != self.head and not vanished:
            self.problem(name, lineno, "broken link: prev is not the hash of the record before")
        # Continue from this record whatever happened, so later problems are reported too.
        self.head = checked.hash or (
            record.get("hash") if isinstance(record.get("hash"), str) else None
        )
        self.report.records += 1
        if record.get("kind") == "retention" and isinstance(record.get("prunedThrough"), int):
            self.pruned_through = max(self.pruned_through, record["prunedThrough"])
            dropped = record.get("evidenceDropped")
            if isinstance(dropped, int) and dropped > 0:
                self.report.evidence_dropped += dropped
        if record.get("kind") == "carried":
            self.carried(name, lineno, record)

    def carried(self, name: str, lineno: int, record: dict[str, Any]) -> None:
        """Each carried line must still be the record that was sealed: its own hash checks."""
        for i, inner in enumerate(segments.carried_lines(record)):
            checked = check_line(inner)
            if checked.error is not None or not checked.sealed:
                why = checked.error or "carries a record without a hash"
                self.problem(name, lineno, f"carried record {i}: {why}")
            self.report.carried += 1
            found = checked.record or {}
            dropped = found.get("evidenceDropped")
            if found.get("kind") == "retention" and isinstance(dropped, int) and dropped > 0:
                self.report.evidence_dropped += dropped


def _settled(current: Path, data: bytes) -> bytes:
    """The current segment again, once no writer is in the middle of a record: a fragment at
    its end may be a record being written right now, not a torn one."""
    try:
        fd = os.open(segments.lock_path(current), os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return data
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)  # writers hold it for one append only
        with open(current, "rb") as fh:
            return fh.read()
    except OSError:
        return data
    finally:
        os.close(fd)


def verify(current: Path) -> Report:
    report = Report()
    walk = _Walk(report)
    sealed = segments.sealed_segments(current)
    numbers = [s.number for s in sealed]
    for a, b in itertools.pairwise(numbers):
        if b != a + 1:
            missing = segments.segment_path(current, a + 1).name
            more = f" (and {b - a - 2} more)" if b - a > 2 else ""
            walk.problem(missing, None, f"missing segment{more}")
    for path in [s.path for s in sealed] + [current]:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            if path == current and not sealed:
                report.notes.append("no audit trail yet")
            continue
        except OSError as exc:
            walk.problem(path.name, None, f"unreadable: {exc.strerror or exc}")
            continue
        report.files.append(path.name)
        if path == current and not data.endswith(b"\n"):
            data = _settled(current, data)
        lines = data.split(b"\n")
        rest = lines.pop()
        for i, raw in enumerate(lines, 1):
            walk.line(path.name, i, raw)
        if rest:
            walk.problem(path.name, len(lines) + 1, "truncated record at the end of the file")
    if walk.torn is not None:
        walk.problem(*walk.torn, "truncated record")
    oldest = numbers[0] if numbers else None
    if oldest is not None and oldest > 1 and walk.pruned_through < oldest - 1:
        report.problems.insert(
            0,
            {
                "file": segments.segment_path(current, oldest - 1).name,
                "line": None,
                "problem": "missing segment (no retention record says it was deleted)",
            },
        )
    elif walk.first_prev is not None and walk.pruned_through < 0:
        report.problems.insert(
            0,
            {
                "file": walk.first_prev[0],
                "line": walk.first_prev[1],
                "problem": "the first record links to a record that is not in the trail "
                "(an older segment is missing)",
            },
        )
    if walk.pruned_through >= 0:
        report.notes.append(f"segments up to {walk.pruned_through:06d} deleted by retention")
    if report.carried:
        report.notes.append(
            f"{report.carried} privileged or denied record(s) carried forward from segments "
            "deleted for size"
        )
    if report.evidence_dropped:
        report.notes.append(
            f"retention dropped {report.evidence_dropped} privileged or denied record(s) younger "
            "than audit.retentionDays (the evidence outgrew its share of audit.maxBytes)"
        )
    if report.legacy_records:
        report.notes.append(f"{report.legacy_records} older records carry no hash")
    report.head = walk.head
    return report
