"""The files of the audit trail and what is kept of them.

`audit.jsonl` is the segment being written. When it grows past the segment size it is renamed
(never rewritten) to `audit.NNNNNN.jsonl`, numbered upwards from 000001, and a new one starts.
Retention deletes whole sealed segments, oldest first, while the trail is larger than its
byte budget or a segment's newest record is older than the retention period. The segment being
written is never deleted. `audit.jsonl.1`, left by versions that rotated by record count, is
read as the oldest segment (number 0).

Size never removes evidence younger than the retention period: before a segment is deleted for
size, its *protected* records (intent records, privileged calls, denials — `protected`) younger
than `retentionDays` are carried forward, byte for byte (each keeps its own hash), into
`carried` records of the segment being written. Carried evidence may take up to
`PROTECTED_SHARE` of `maxBytes`; beyond that the oldest of it is dropped, and the retention
record says how many privileged records went before their age (`evidenceDropped`), which
`meith audit verify --strict` fails on.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from meith_core.base.ids import new_id

DEFAULT_RETENTION_DAYS: Final = 30.0
DEFAULT_MAX_BYTES: Final = 200 * 1024 * 1024
MIN_MAX_BYTES: Final = 1024 * 1024
#: Bounds for one segment: small enough that retention frees space in steps of a few percent,
#: large enough that rotation is rare.
MIN_SEGMENT_BYTES: Final = 64 * 1024
MAX_SEGMENT_BYTES: Final = 16 * 1024 * 1024
#: How far back from the end of a file to look for its last whole record.
MAX_TAIL_SCAN: Final = 1024 * 1024
#: The share of `maxBytes` evidence carried forward may take at most.
PROTECTED_SHARE: Final = 0.5
#: What carrying a line costs beyond its bytes (quotes escaped inside a JSON string).
_CARRY_OVERHEAD: Final = 64
#: One `carried` record holds at most this many bytes of original lines.
CARRIED_BATCH_BYTES: Final = 256 * 1024
#: Privileged capability names as they appear in a record (kept in step with
#: protocol.capabilities.PRIVILEGED by a test).
PRIVILEGED_NAMES: Final = frozenset(
    {"writes-files", "starts-process", "controls-browser", "destructive"}
)
#: A line holding none of these is not protected (a cheap test before parsing it).
_MARKERS: Final = (
    b'"kind":"intent"',
    b'"kind":"carried"',
    b'"kind":"trust-change"',
    b'"decision":"deny"',
    b'"evidenceDropped"',
    *(b'"' + name.encode() + b'"' for name in sorted(PRIVILEGED_NAMES)),
)


class AuditSettings(BaseModel):
    """The `audit` section of settings.json."""

    model_config = ConfigDict(extra="forbid")

    retentionDays: float = Field(
        DEFAULT_RETENTION_DAYS,
        ge=1,
        le=36_500,
        description="Old segments whose newest record is older than this are deleted",
    )
    maxBytes: int = Field(
        DEFAULT_MAX_BYTES,
        ge=MIN_MAX_BYTES,
        description="The oldest segments are deleted while the trail is larger than this",
    )


@dataclass(frozen=True, slots=True)
class Limits:
    max_bytes: int = DEFAULT_MAX_BYTES
    retention_s: float = DEFAULT_RETENTION_DAYS * 86_400

    @property
    def segment_bytes(self) -> int:
        return max(MIN_SEGMENT_BYTES, min(MAX_SEGMENT_BYTES, self.max_bytes // 16))

    @classmethod
    def from_settings(cls, section: object) -> Limits:
        """Limits from a settings section; anything invalid falls back to the defaults."""
        try:
            parsed = AuditSettings.model_validate(section if section is not None else {})
        except ValidationError:
            parsed = AuditSettings()
        return cls(parsed.maxBytes, parsed.retentionDays * 86_400)


@dataclass(frozen=True, slots=True)
class Segment:
    number: int
    path: Path


def lock_path(current: Path) -> Path:
    """The lock every writer of the trail holds while it appends (and rotates)."""
    return current.with_name(current.name.removesuffix(".jsonl") + ".lock")


def segment_path(current: Path, number: int) -> Path:
    stem = current.name.removesuffix(".jsonl")
    return current.with_name(f"{stem}.{number:06d}.jsonl")


def sealed_segments(current: Path) -> list[Segment]:
    """The renamed segments, oldest first (the legacy `.1` file first of all)."""
    stem = re.escape(current.name.removesuffix(".jsonl"))
    pattern = re.compile(rf"{stem}\.(\d{{6,}})\.jsonl")
    found: list[Segment] = []
    try:
        names = os.listdir(current.parent)
    except OSError:
        return []
    for name in names:
        if m := pattern.fullmatch(name):
            found.append(Segment(int(m.group(1)), current.parent / name))
        elif name == current.name + ".1":
            found.append(Segment(0, current.parent / name))
    found.sort(key=lambda s: s.number)
    return found


def all_files(current: Path) -> list[Path]:
    """Every file of the trail in order: sealed segments, then the one being written."""
    return [s.path for s in sealed_segments(current)] + [current]


def rotate(current: Path) -> Path:
    """Rename the current segment to the next number; the caller holds the trail's lock."""
    existing = sealed_segments(current)
    target = segment_path(current, (existing[-1].number if existing else 0) + 1)
    os.rename(current, target)
    return target


@dataclass(slots=True)
class Pruned:
    """What one pass of retention did."""

    segments: list[Segment] = field(default_factory=list)
    #: Protected lines (original bytes, no newline) to write again, oldest first.
    carried: list[bytes] = field(default_factory=list)
    #: Protected records younger than the retention period that were dropped (over the share).
    dropped: int = 0

    def __bool__(self) -> bool:
        return bool(self.segments)

    def records(self, limits: Limits) -> list[dict[str, Any]]:
        """What the writer records of it: the carried evidence, then the `retention` record."""
        ts = time.time_ns() // 1_000_000
        out: list[dict[str, Any]] = [
            {
                "id": new_id("audit"),
                "ts": ts,
                "kind": "carried",
                "reason": "evidence younger than the retention period, carried forward from "
                "a segment deleted for size (each line keeps its own hash)",
                "count": len(batch),
                "lines": batch,
            }
            for batch in carried_batches(self.carried)
        ]
        names = [s.path.name for s in self.segments]
        record: dict[str, Any] = {
            "id": new_id("audit"),
            "ts": ts,
            "kind": "retention",
            "reason": f"retention deleted {len(names)} old segment(s) (keeping "
            f"{limits.max_bytes} bytes, {limits.retention_s / 86_400:g} days)",
            "pruned": names,
            "prunedThrough": self.segments[-1].number,
            "carried": len(self.carried),
            "pid": os.getpid(),
        }
        if self.dropped:
            record["evidenceDropped"] = self.dropped
            record["reason"] += (
                f"; {self.dropped} privileged or denied record(s) younger than the retention "
                "period were dropped: the evidence outgrew its share of maxBytes"
            )
        return [*out, record]


def protected(record: dict[str, object]) -> bool:
    """Evidence size-based retention keeps for its full age: intent records, denials,
    privileged calls (a coalesced record of denials included) and changes to the trust root."""
    if record.get("kind") in ("intent", "trust-change") or record.get("decision") == "deny":
        return True
    caps = record.get("capabilities")
    return (
        record.get("decision") == "allow"
        and isinstance(caps, list)
        and any(c in PRIVILEGED_NAMES for c in caps)
    )


def carried_lines(record: dict[str, object]) -> list[bytes]:
    """The original lines a `carried` record holds."""
    lines = record.get("lines")
    if not isinstance(lines, list):
        return []
    return [line.encode() for line in lines if isinstance(line, str)]


def _protected_lines(path: Path, cutoff_ms: float) -> list[bytes]:
    """The protected lines of a segment younger than `cutoff_ms` (carried ones included)."""
    try:
        data = path.read_bytes()
    except OSError:
        return []
    out: list[bytes] = []
    for line in data.split(b"\n"):
        if not any(marker in line for marker in _MARKERS):
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        if record.get("kind") == "carried":
            for inner in carried_lines(record):
                try:
                    inner_record = json.loads(inner)
                except ValueError:
                    continue
                if isinstance(inner_record, dict) and _young(inner_record, cutoff_ms):
                    out.append(inner)
        elif (protected(record) or _drop_report(record)) and _young(record, cutoff_ms):
            out.append(line)
    return out


def _drop_report(record: dict[str, object]) -> bool:
    """A retention record that says evidence was dropped is evidence too."""
    return record.get("kind") == "retention" and bool(record.get("evidenceDropped"))


def _young(record: dict[str, object], cutoff_ms: float) -> bool:
    ts = record.get("ts")
    return isinstance(ts, int | float) and ts >= cutoff_ms


def prune(current: Path, limits: Limits, now: float) -> Pruned:
    """Delete the sealed segments retention lets go, carrying their young evidence forward
    (see the module docstring)."""
    sealed = sealed_segments(current)
    sizes: list[int] = []
    mtimes: list[float] = []
    for seg in sealed:
        try:
            st = os.stat(seg.path, follow_symlinks=False)
        except OSError:
            st = None
        sizes.append(st.st_size if st else 0)
        mtimes.append(st.st_mtime if st else 0.0)
    total = sum(sizes)
    with contextlib.suppress(OSError):
        total += os.stat(current, follow_symlinks=False).st_size
    cutoff_ms = (now - limits.retention_s) * 1000
    budget = int(limits.max_bytes * PROTECTED_SHARE)
    result = Pruned()
    for seg, size, mtime in zip(sealed, sizes, mtimes, strict=True):
        expired = now - mtime > limits.retention_s
        if total <= limits.max_bytes and not expired:
            break
        # Deleted for size (its newest record is younger than the retention period): its
        # young evidence is carried forward first.
        keep = [] if expired else _protected_lines(seg.path, cutoff_ms)
        try:
            os.unlink(seg.path)
        except FileNotFoundError:
            pass
        except OSError:
            break
        result.segments.append(seg)
        result.carried.extend(keep)
        # What is carried is written again: it still counts against the budget.
        total += sum(len(line) + _CARRY_OVERHEAD for line in keep) - size
    # Over the reserved share: the oldest carried evidence goes, and that is said.
    # Retention records that report dropped evidence are never dropped themselves (they are
    # small, and `meith audit verify` adds them up).
    carried_bytes = sum(len(line) + _CARRY_OVERHEAD for line in result.carried)
    if carried_bytes > budget:
        kept: list[bytes] = []
        for line in result.carried:
            if carried_bytes > budget and b'"evidenceDropped"' not in line:
                carried_bytes -= len(line) + _CARRY_OVERHEAD
                result.dropped += 1
            else:
                kept.append(line)
        result.carried = kept
    return result


def carried_batches(lines: list[bytes]) -> list[list[str]]:
    """Carried lines grouped into records of at most CARRIED_BATCH_BYTES."""
    batches: list[list[str]] = []
    size = CARRIED_BATCH_BYTES
    for line in lines:
        if size + len(line) > CARRIED_BATCH_BYTES:
            batches.append([])
            size = 0
        batches[-1].append(line.decode("utf-8", "replace"))
        size += len(line)
    return batches


def trail_bytes(current: Path) -> int:
    """The size of every file of the trail."""
    total = 0
    for path in all_files(current):
        with contextlib.suppress(OSError):
            total += os.stat(path, follow_symlinks=False).st_size
    return total


def last_line(fd: int, size: int) -> tuple[bytes | None, int]:
    """The last whole line of an open file (without its newline) and how many bytes follow it
    (a torn record when non-zero). Reads backwards from the end in blocks."""
    buf = b""
    pos = size
    while pos > 0 and size - pos < MAX_TAIL_SCAN:
        step = min(64 * 1024, pos)
        pos -= step
        buf = os.pread(fd, step, pos) + buf
        nl = buf.rfind(b"\n")
        if nl < 0:
            continue
        start = buf.rfind(b"\n", 0, nl)
        if start >= 0 or pos == 0:
            return buf[start + 1 : nl], len(buf) - nl - 1
    nl = buf.rfind(b"\n")
    # No whole line within reach: everything after the last newline is a fragment.
    return None, len(buf) - nl - 1 if nl >= 0 else len(buf)


def records_of(path: Path) -> Iterator[dict[str, Any]]:
    """The records of one file; a `carried` record is read as the records it carries."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below, generator-safe
    except OSError:
        return
    with fh:
        for raw in fh:
            try:
                record = json.loads(raw)
            except ValueError:
                continue  # a foreign or torn line: skip, never fail the reader
            if not isinstance(record, dict):
                continue
            if record.get("kind") == "carried":
                for line in carried_lines(record):
                    try:
                        inner = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(inner, dict):
                        yield {**inner, "carried": True}
                continue
            yield record
