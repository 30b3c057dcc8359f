"""The audit trail writer: one hash-chained JSON record per line, one `os.write` per record.

Files are 0600 in a 0700 directory and opened with O_NOFOLLOW (a planted symlink cannot redirect
the trail). `segments` says which files make up the trail and what retention keeps, `chain` how
a record is sealed, `coalesce` which failures are counted rather than written one by one.

Several runtimes may share a home, so each append happens under an exclusive `flock` on
`audit.lock`. Under that lock a writer compares the file with what it last wrote (one `fstat`
in the common case); when another runtime appended or rotated since, it re-reads the chain head
from the end of the file (a seek, not a scan), so every runtime extends the same chain. A file whose last record was cut short (a crash
mid-write) is repaired by the next writer: it ends the fragment with a newline and writes a
`torn-tail` record that links to the last whole record. A segment deleted, replaced or cut
short under a writer is recorded as lost (`segment_identity`), never silently re-created.
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

from meith_core.audit import segment_identity, segments
from meith_core.audit.chain import seal
from meith_core.audit.coalesce import BURST, OK_BURST, WINDOW_S, Coalescer
from meith_core.audit.entry import intent_entry
from meith_core.audit.segment_identity import HeadFile, Identity, identity_at, was_rotated
from meith_core.audit.segments import Limits
from meith_core.base.ids import new_id

if TYPE_CHECKING:
    from meith_core.audit.call_view import AuditedCall

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
        self._size = -1  # where this writer expects the file to end
        self._head: str | None = None
        #: The segment this writer holds (or held until an error closed it): its identity and
        #: the bytes it last saw in it, kept outside the segment (here and in `audit.head`).
        self._ident: Identity | None = None
        self._held_bytes = 0
        self._head_file = HeadFile(path)
        #: A loss noticed, to be recorded first in the segment written next.
        self._pending_loss: dict[str, Any] | None = None
        self._segment_bytes = 0
        self._pruned_at_open = False
        self.records_written = 0
        #: Segments that vanished under this writer (or while no writer held them).
        self.segments_vanished = 0
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
            self._head_file.close()
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
            if self._ident is not None:
                self._held_bytes = self._size
                self._head_file.write(self._ident, self._size, self._head)
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
        """Open the current segment unless the open one is still it; True when (re)opened. A
        held segment that is gone from its name without a rotation having sealed it is a
        loss, recorded by the next append."""
        at_name = identity_at(self.path)
        if self._fd >= 0:
            held = os.fstat(self._fd)
            if at_name == Identity.of(held) and held.st_nlink > 0:
                return False
            if held.st_mode & stat.S_IWUSR:  # a rotation makes it read-only first
                how = "deleted" if held.st_nlink == 0 else "replaced"
                self._note_loss(how, Identity.of(held), held.st_size)
        elif self._ident is not None:  # closed after an error
            if at_name != self._ident and not was_rotated(self.path, self._ident):
                self._note_loss("deleted or replaced", self._ident, self._held_bytes)
        elif self._pending_loss is None:  # opening the trail: what audit.head remembers
            self._pending_loss = segment_identity.lost_while_closed(
                self.path, self._head_file.read()
            )
        self._close_locked()
        fd = os.open(self.path, _FLAGS, 0o600)
        try:
            st = os.fstat(fd)
            if st.st_mode & 0o077:
                os.fchmod(fd, 0o600)
        except OSError:
            os.close(fd)
            raise
        self._fd, self._size = fd, -1
        self._ident = Identity.of(st)
        return True

    def _note_loss(self, how: str, identity: Identity, size: int) -> None:
        if self._pending_loss is None:
            self._pending_loss = segment_identity.lost(how, identity, size, self._head)

    def _sync_locked(self) -> None:
        """Make the cached chain head and file end true to the file (under the flock)."""
        if self._fd >= 0 and self._pruned_at_open:
            # The common case costs an fstat and a stat: nobody appended (same size), nobody
            # sealed the segment (a rotation makes it read-only first), removed it or put
            # another file at its name.
            st = os.fstat(self._fd)
            if (
                st.st_size == self._size
                and st.st_mode & stat.S_IWUSR
                and st.st_nlink > 0
                and identity_at(self.path) == Identity.of(st)
            ):
                return
        reopened = self._reopen_if_moved_locked()
        if not self._pruned_at_open:
            self._pruned_at_open = True
            self._apply_retention_locked(rotate=False)
        else:
            size = os.fstat(self._fd).st_size
            if not reopened and size < self._size and self._ident is not None:
                self._note_loss("truncated", self._ident, self._size)
            if reopened or size != self._size:
                self._load_head_locked(size)
        if self._pending_loss is not None:
            self._record_loss_locked()

    def _record_loss_locked(self) -> None:
        """The `segment-vanished` record: linked to the last record the lost segment held
        when nothing was written since (so the chain itself shows the gap)."""
        loss, self._pending_loss = self._pending_loss, None
        assert loss is not None
        self.segments_vanished += 1
        if self._size == 0 and loss["lost"]["lastHash"] is not None:
            self._head = loss["lost"]["lastHash"]
        self._seal_locked(
            {
                "id": new_id("audit"),
                "ts": now_ms(),
                "kind": segment_identity.KIND,
                **loss,
                "reason": "the live audit segment was "
                + loss["how"]
                + "; the records it held are not in the trail",
                "noticed": self.segments_vanished,
                "pid": os.getpid(),
            }
        )

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
        self._ident = None  # sealed: no longer this writer's to lose
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
        self.evidence_dropped += pruned.dropped
        for record in pruned.records(limits):
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
        self._fd, self._size = -1, -1

    # -- reading ------------------------------------------------------------------------

    def read(self) -> Iterator[dict[str, Any]]:
        """Every parseable record, oldest first, across the segments."""
        for path in segments.all_files(self.path):
            yield from segments.records_of(path)

    def tail(
        self, limit: int = 200, predicate: Callable[[dict[str, Any]], bool] | None = None
    ) -> list[dict[str, Any]]:
        """The newest `limit` records matching `predicate`, oldest first. Reads segments newest
        first and stops when it has enough (the trail may hold hundreds of megabytes)."""
        if limit <= 0:
            return []
        found: list[dict[str, Any]] = []
        for path in reversed(segments.all_files(self.path)):
            matching = [r for r in segments.records_of(path) if predicate is None or predicate(r)]
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
            "segmentsVanished": self.segments_vanished,
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


def _hash_of(line: bytes) -> str | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    digest = record.get("hash") if isinstance(record, dict) else None
    return digest if isinstance(digest, str) else None


def now_ms() -> int:
    return time.time_ns() // 1_000_000
