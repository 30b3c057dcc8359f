"""The files of the audit trail and what is kept of them.

`audit.jsonl` is the segment being written. When it grows past the segment size it is renamed
(never rewritten) to `audit.NNNNNN.jsonl`, numbered upwards from 000001, and a new one starts.
Retention deletes whole sealed segments, oldest first, while the trail is larger than its
byte budget or a segment's newest record is older than the retention period. The segment being
written is never deleted. `audit.jsonl.1`, left by versions that rotated by record count, is
read as the oldest segment (number 0).
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

DEFAULT_RETENTION_DAYS: Final = 30.0
DEFAULT_MAX_BYTES: Final = 200 * 1024 * 1024
MIN_MAX_BYTES: Final = 1024 * 1024
#: Bounds for one segment: small enough that retention frees space in steps of a few percent,
#: large enough that rotation is rare.
MIN_SEGMENT_BYTES: Final = 64 * 1024
MAX_SEGMENT_BYTES: Final = 16 * 1024 * 1024
#: How far back from the end of a file to look for its last whole record.
MAX_TAIL_SCAN: Final = 1024 * 1024


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


def prune(current: Path, limits: Limits, now: float) -> list[Segment]:
    """Delete the sealed segments retention lets go; returns them (oldest first)."""
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
    pruned: list[Segment] = []
    for seg, size, mtime in zip(sealed, sizes, mtimes, strict=True):
        if total <= limits.max_bytes and now - mtime <= limits.retention_s:
            break
        try:
            os.unlink(seg.path)
        except FileNotFoundError:
            pass
        except OSError:
            break
        pruned.append(seg)
        total -= size
    return pruned


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
