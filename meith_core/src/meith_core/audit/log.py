"""The audit trail writer: one hash-chained JSON record per line, one `os.write` per record.

Files are 0600 in a 0700 directory and opened with O_NOFOLLOW (a planted symlink cannot redirect
the trail). `segments` says which files make up the trail and what retention keeps, `chain` how
a record is sealed, `coalesce` which failures are counted rather than written one by one.

Several runtimes may share a home, so each append happens under an exclusive `flock` on
`audit.lock`. Under that lock a writer compares the file with what it last wrote (one `fstat`
in the common case); when another runtime appended or rotated since, it re-reads the chain head
from the end of the file (a seek, not a scan), so every runtime extends the same chain. A file whose last record was cut short (a crash
mid-write) is repaired by the next writer: it ends the fragment with a newline and writes a
`torn-tail` record that links to the last whole record.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from meith_core.audit import segments
from meith_core.audit.chain import seal
from meith_core.audit.coalesce import BURST, OK_BURST, WINDOW_S, Coalescer
from meith_core.audit.entry import intent_entry
from meith_core.audit.segments import Limits
from meith_core.base.ids import new_id

if TYPE_CHECKING:
    from meith_core.audit.call_view import AuditedCall

#: How often a writer looks the path up again although its file looks unchanged (another
#: program renaming the file is noticed within this time).
PATH_CHECK_S: Final = 1.0
#: Below this much free space a privileged call is refused rather than run unaudited.
MIN_FREE_BYTES: Final = 1024 * 1024

_FLAGS: Final = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
_LOCK_FLAGS: Final = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW


class _ShortWrite(OSError):
    pass


class AuditLog:
    def __init__(
        self,
        path: Path,
        *,
        limits: Callable[[], Limits] | Limits | None = None,
        on_error: Callable[[str], None] | None = None,
        coalesce_window_s: float = WINDOW_S,
        coalesce_burst: int = BURST,
        coalesce_ok_burst: int = OK_BURST,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = path
        self.lock_path = segments.lock_path(path)
        if limits is None or isinstance(limits, Limits):
            fixed = limits or Limits()
            self._limits: Callable[[], Limits] = lambda: fixed
        else:
            self._limits = limits
        self._on_error = on_error
        self._clock = clock
        self._coalescer = Coalescer(coalesce_window_s, coalesce_burst, ok_burst=coalesce_ok_burst)
        self._lock = threading.Lock()
        self._fd = -1
        self._lock_fd = -1
        self._ino = -1
        self._size = -1  # where this writer expects the file to end
        self._head: str | None = None
        self._segment_bytes = 0
        self._pruned_at_open = False
        self._checked = 0.0
        self.records_written = 0
        self.records_coalesced = 0
        #: Evidence younger than the retention period that retention had to drop (see
        #: `segments`); app_health warns when it is not zero.
        self.evidence_dropped = 0
        self.last_error: str | None = None
        #: Told of every record once it is written (the OpenTelemetry export, `host.otel`);
        #: None, the default, costs one attribute check per record.
        self.observer: Callable[[dict[str, Any]], None] | None = None

    # -- writing ------------------------------------------------------------------------

    def write(self, entry: dict[str, Any]) -> bool:
        """Append one call record (or count it into a coalesced one). False (and `last_error`
        set) when it could not be written."""
        with self._lock:
            now = self._clock()
            records = self._coalescer.due(now)
            if self._coalescer.absorb(entry, now):
                self.records_coalesced += 1
                return self._append_locked(records) if records else True
            records.append(entry)
            return self._append_locked(records)

    def intent(self, call: AuditedCall) -> bool:
        """Record that an authorised privileged call is about to run. Its outcome record follows
        with the same requestId; a trail with the intent alone shows the call as interrupted."""
        record = intent_entry(call, entry_id=new_id("audit"), ts=now_ms(), pid=os.getpid())
        with self._lock:
            return self._append_locked([record])

    def preflight(self) -> str | None:
        """None when a record can be written now, else why not (checked before privileged calls)."""
        with self._lock:
            try:
                self._reopen_if_moved_locked()
                vfs = os.fstatvfs(self._fd)
            except OSError as exc:
                self._close_locked()
                return f"audit trail unavailable ({self.path}: {exc.strerror or exc})"
        if vfs.f_bavail * vfs.f_frsize < MIN_FREE_BYTES:
            return f"audit trail unavailable: no free space for {self.path}"
        return None

    def close(self) -> None:
        with self._lock:
            records = self._coalescer.drain()
            if records:
                self._append_locked(records)
            self._close_locked()
            if self._lock_fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(self._lock_fd)
                self._lock_fd = -1

    def _fail(self, message: str) -> bool:
        self.last_error = message
        if self._on_error is not None:
            with contextlib.suppress(Exception):
                self._on_error(message)
        return False

    def _append_locked(self, records: list[dict[str, Any]]) -> bool:
        try:
            if self._lock_fd < 0:
                self._lock_fd = os.open(self.lock_path, _LOCK_FLAGS, 0o600)
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        except OSError as exc:
            return self._fail(f"cannot lock {self.lock_path}: {exc.strerror or exc}")
        ok = True
        observer = self.observer
        written: list[dict[str, Any]] | None = None if observer is None else []
        try:
            self._sync_locked()
            for record in records:
                if self._size >= self._segment_bytes:
                    self._rotate_locked()
                try:
                    line, digest = seal(record, self._head)
                except (TypeError, ValueError) as exc:  # the caller builds entries; be safe
                    ok = self._fail(f"audit record not serialisable: {exc}")
                    continue
                self._write_locked(line)
                self._head = digest
                self.records_written += 1
                if written is not None:
                    written.append(record)
        except _ShortWrite as exc:
            # A torn line would poison readers; the next writer repairs it and says so.
            self._close_locked()
            return self._fail(str(exc))
        except OSError as exc:
            self._close_locked()
            return self._fail(f"cannot write {self.path}: {exc.strerror or exc}")
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
        if observer is not None and written:
            for record in written:
                with contextlib.suppress(Exception):  # an exporter never fails the trail
                    observer(record)
        if ok:
            self.last_error = None
        return ok

    def _write_locked(self, data: bytes) -> None:
        written = os.write(self._fd, data)
        if written != len(data):
            raise _ShortWrite(f"short write to {self.path}: {written} of {len(data)} bytes")
        self._size += written

    def _reopen_if_moved_locked(self) -> bool:
        """Open the current segment unless the open one is still it; True when (re)opened."""
        try:
            ino = os.stat(self.path, follow_symlinks=False).st_ino
        except FileNotFoundError:
            ino = -2
        self._checked = time.monotonic()
        if self._fd >= 0 and ino == self._ino:
            return False
        self._close_locked()
        fd = os.open(self.path, _FLAGS, 0o600)
        try:
            st = os.fstat(fd)
            if st.st_mode & 0o077:
                os.fchmod(fd, 0o600)
        except OSError:
            os.close(fd)
            raise
        self._fd, self._ino, self._size = fd, st.st_ino, -1
        return True

    def _sync_locked(self) -> None:
        """Make the cached chain head and file end true to the file (under the flock)."""
        if self._fd >= 0 and self._pruned_at_open:
            # The common case costs one fstat: nobody appended (same size), nobody sealed the
            # segment (a rotation makes it read-only first) or removed it, and the path was
            # looked up recently.
            st = os.fstat(self._fd)
            if (
                st.st_size == self._size
                and st.st_mode & stat.S_IWUSR
                and st.st_nlink > 0
                and time.monotonic() - self._checked < PATH_CHECK_S
            ):
                return
        reopened = self._reopen_if_moved_locked()
        if not self._pruned_at_open:
            self._pruned_at_open = True
            self._apply_retention_locked(rotate=False)
            return
        size = os.fstat(self._fd).st_size
        if reopened or size != self._size:
            self._load_head_locked(size)

    def _load_head_locked(self, size: int) -> None:
        line, torn = segments.last_line(self._fd, size)
        self._size = size
        if line is None:
            self._head = self._head_of_sealed()
        else:
            self._head = _hash_of(line)
        if self._segment_bytes == 0:
            self._segment_bytes = self._limits().segment_bytes
        if torn:
            repair, digest = seal(
                {
                    "id": new_id("audit"),
                    "ts": now_ms(),
                    "kind": "torn-tail",
                    "reason": "the previous record was cut short (a crash mid-write); "
                    "the chain continues from the last whole record",
                    "tornBytes": torn,
                    "pid": os.getpid(),
                },
                self._head,
            )
            self._write_locked(b"\n" + repair)
            self._head = digest
            self.records_written += 1

    def _head_of_sealed(self) -> str | None:
        sealed = segments.sealed_segments(self.path)
        if not sealed:
            return None
        try:
            fd = os.open(sealed[-1].path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            return None
        try:
            line, _ = segments.last_line(fd, os.fstat(fd).st_size)
        finally:
            os.close(fd)
        return _hash_of(line) if line is not None else None

    def _rotate_locked(self) -> None:
        # Sealed segments are read-only; that is also how other writers notice the rotation.
        os.fchmod(self._fd, 0o400)
        try:
            segments.rotate(self.path)
        except OSError:
            os.fchmod(self._fd, 0o600)  # still the segment being written
            raise
        self._close_locked()
        self._apply_retention_locked(rotate=True)

    def _apply_retention_locked(self, *, rotate: bool) -> None:
        """Prune what retention lets go and record it; the current segment is open after."""
        limits = self._limits()
        self._segment_bytes = limits.segment_bytes
        if rotate:
            self._reopen_if_moved_locked()
        self._load_head_locked(os.fstat(self._fd).st_size)
        pruned = segments.prune(self.path, limits, time.time())
        if not pruned:
            return
        for batch in segments.carried_batches(pruned.carried):
            self._seal_locked(
                {
                    "id": new_id("audit"),
                    "ts": now_ms(),
                    "kind": "carried",
                    "reason": "evidence younger than the retention period, carried forward from "
                    "a segment deleted for size (each line keeps its own hash)",
                    "count": len(batch),
                    "lines": batch,
                }
            )
        names = [s.path.name for s in pruned.segments]
        record: dict[str, Any] = {
            "id": new_id("audit"),
            "ts": now_ms(),
            "kind": "retention",
            "reason": f"retention deleted {len(names)} old segment(s) (keeping "
            f"{limits.max_bytes} bytes, {limits.retention_s / 86_400:g} days)",
            "pruned": names,
            "prunedThrough": pruned.segments[-1].number,
            "carried": len(pruned.carried),
            "pid": os.getpid(),
        }
        if pruned.dropped:
            self.evidence_dropped += pruned.dropped
            record["evidenceDropped"] = pruned.dropped
            record["reason"] += (
                f"; {pruned.dropped} privileged or denied record(s) younger than the retention "
                "period were dropped: the evidence outgrew its share of maxBytes"
            )
        self._seal_locked(record)

    def _seal_locked(self, record: dict[str, Any]) -> None:
        line, digest = seal(record, self._head)
        self._write_locked(line)
        self._head = digest
        self.records_written += 1

    def _close_locked(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd, self._ino, self._size = -1, -1, -1

    # -- reading ------------------------------------------------------------------------

    def read(self) -> Iterator[dict[str, Any]]:
        """Every parseable record, oldest first, across the segments."""
        for path in segments.all_files(self.path):
            yield from _records_of(path)

    def tail(
        self, limit: int = 200, predicate: Callable[[dict[str, Any]], bool] | None = None
    ) -> list[dict[str, Any]]:
        """The newest `limit` records matching `predicate`, oldest first. Reads segments newest
        first and stops when it has enough (the trail may hold hundreds of megabytes)."""
        if limit <= 0:
            return []
        found: list[dict[str, Any]] = []
        for path in reversed(segments.all_files(self.path)):
            matching = [r for r in _records_of(path) if predicate is None or predicate(r)]
            found = matching[-(limit - len(found)) :] + found
            if len(found) >= limit:
                break
        return found

    def status(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "ok": self.last_error is None,
            "lastError": self.last_error,
            "recordsWritten": self.records_written,
            "recordsCoalesced": self.records_coalesced,
            "evidenceDropped": self.evidence_dropped,
        }

    def usage(self) -> dict[str, Any]:
        """How full the trail is: its bytes against `maxBytes` (a few stats; app_health)."""
        limits = self._limits()
        used = segments.trail_bytes(self.path)
        return {
            "bytes": used,
            "maxBytes": limits.max_bytes,
            "share": round(used / limits.max_bytes, 4) if limits.max_bytes else 0.0,
            "evidenceDropped": self.evidence_dropped,
        }


def _records_of(path: Path) -> Iterator[dict[str, Any]]:
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
                for line in segments.carried_lines(record):
                    try:
                        inner = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(inner, dict):
                        yield {**inner, "carried": True}
                continue
            yield record


def _hash_of(line: bytes) -> str | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    digest = record.get("hash") if isinstance(record, dict) else None
    return digest if isinstance(digest, str) else None


def now_ms() -> int:
    return time.time_ns() // 1_000_000
