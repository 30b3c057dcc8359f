"""One lock per file, so that meith's own writers check-and-replace a file one at a time."""

from __future__ import annotations

import threading
from pathlib import Path


class FileLocks:
    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[Path, threading.Lock] = {}

    def of(self, path: Path) -> threading.Lock:
        with self._guard:
            lock = self._locks.get(path)
            if lock is None:
                lock = self._locks[path] = threading.Lock()
            return lock
