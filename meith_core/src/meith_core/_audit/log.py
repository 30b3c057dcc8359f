"""`$MEITH_HOME/audit.jsonl`: one JSON object per line, one `os.write` per record.

The file is 0600 in a 0700 directory and opened with O_NOFOLLOW (a planted symlink cannot
redirect the trail). It keeps the newest `max_records` by renaming the full file to
`audit.jsonl.1` and starting a new one, never by rewriting in place, so a reader or a crash
never sees a half-rewritten trail.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

from meith_core._protocol.framing import dumps_bytes

MAX_RECORDS: Final = 20_000
#: Below this much free space a privileged call is refused rather than run unaudited.
MIN_FREE_BYTES: Final = 1024 * 1024
#: How often to check whether another process rotated or removed the file (a stat per record
#: would cost more than the write itself).
ROTATION_CHECK_S: Final = 1.0

_FLAGS: Final = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW


class AuditLog:
    def __init__(
        self,
        path: Path,
        *,
        max_records: int = MAX_RECORDS,
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        self.path = path
        self.rotated_path = path.with_name(path.name + ".1")
        self.max_records = max_records
        self._on_error = on_error
        self._lock = threading.Lock()
        self._fd = -1
        self._ino = -1
        self._checked = 0.0
        self._count = 0
        self.records_written = 0
        self.last_error: str | None = None

    # -- writing ------------------------------------------------------------------------

    def write(self, entry: dict[str, Any]) -> bool:
        """Append one record. False (and `last_error` set) when it could not be written."""
        try:
            line = dumps_bytes(entry) + b"\n"
        except (TypeError, ValueError) as exc:  # the caller builds entries; be safe anyway
            return self._fail(f"audit record not serialisable: {exc}")
        with self._lock:
            try:
                self._ensure_open_locked()
                if self._count >= self.max_records:
                    self._rotate_locked()
                written = os.write(self._fd, line)
            except OSError as exc:
                self._close_locked()
                return self._fail(f"cannot write {self.path}: {exc.strerror or exc}")
            if written != len(line):
                # A torn line would poison readers; close so the next write starts clean.
                self._close_locked()
                return self._fail(f"short write to {self.path}: {written} of {len(line)} bytes")
            self._count += 1
            self.records_written += 1
            self.last_error = None
            return True

    def preflight(self) -> str | None:
        """None when a record can be written now, else why not (checked before privileged calls)."""
        with self._lock:
            try:
                self._ensure_open_locked(force=True)
                vfs = os.fstatvfs(self._fd)
            except OSError as exc:
                self._close_locked()
                return f"audit trail unavailable ({self.path}: {exc.strerror or exc})"
        if vfs.f_bavail * vfs.f_frsize < MIN_FREE_BYTES:
            return f"audit trail unavailable: no free space for {self.path}"
        return None

    def close(self) -> None:
        with self._lock:
            self._close_locked()

    def _fail(self, message: str) -> bool:
        self.last_error = message
        if self._on_error is not None:
            with contextlib.suppress(Exception):
                self._on_error(message)
        return False

    def _ensure_open_locked(self, *, force: bool = False) -> None:
        if self._fd >= 0:
            now = time.monotonic()
            if not force and now - self._checked < ROTATION_CHECK_S:
                return
            try:
                if os.stat(self.path, follow_symlinks=False).st_ino == self._ino:
                    self._checked = now
                    return
            except FileNotFoundError:
                pass
            # Rotated or removed by someone else (another runtime on this home): reopen.
            self._close_locked()
        fd = os.open(self.path, _FLAGS, 0o600)
        try:
            st = os.fstat(fd)
            if st.st_mode & 0o077:
                os.fchmod(fd, 0o600)
            self._count = _count_lines(self.path)
        except OSError:
            os.close(fd)
            raise
        self._fd, self._ino = fd, st.st_ino
        self._checked = time.monotonic()

    def _rotate_locked(self) -> None:
        os.replace(self.path, self.rotated_path)
        self._close_locked()
        self._ensure_open_locked()

    def _close_locked(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd, self._ino = -1, -1

    # -- reading ------------------------------------------------------------------------

    def read(self) -> Iterator[dict[str, Any]]:
        """Every parseable record, oldest first (rotated file, then the current one)."""
        for path in (self.rotated_path, self.path):
            try:
                fh = open(path, "rb")  # noqa: SIM115 - closed below, generator-safe
            except OSError:
                continue
            with fh:
                for raw in fh:
                    try:
                        record = json.loads(raw)
                    except ValueError:
                        continue  # a foreign or torn line: skip, never fail the reader
                    if isinstance(record, dict):
                        yield record

    def tail(
        self, limit: int = 200, predicate: Callable[[dict[str, Any]], bool] | None = None
    ) -> list[dict[str, Any]]:
        """The newest `limit` records matching `predicate`, oldest first."""
        out: list[dict[str, Any]] = []
        for record in self.read():
            if predicate is None or predicate(record):
                out.append(record)
                if len(out) > limit * 2:
                    del out[: len(out) - limit]
        return out[-limit:] if limit > 0 else []

    def status(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "ok": self.last_error is None,
            "lastError": self.last_error,
            "recordsWritten": self.records_written,
        }


def _count_lines(path: Path) -> int:
    count = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            count += chunk.count(b"\n")
    return count


def now_ms() -> int:
    return time.time_ns() // 1_000_000
