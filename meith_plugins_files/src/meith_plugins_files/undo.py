"""Undo steps: the version of a file before each change made through meith.

Kept under the plugin's private directory in MEITH_HOME (`state/files/undo/`, 0700, files
0600) so they survive a runtime restart: one directory per file (named by a hash of its
path), one file per step (`000000000001.step`: a JSON header line, then the content before
the change). A change writes one new file and replaces none, so keeping its undo step costs
one write, which is not flushed to the disk: steps survive runtime restarts, and a power cut
may lose the newest ones (a torn step is refused: its content is checked against its hash). At most `MAX_STEPS` a file; the oldest go first. Callers hold the file's
lock (see `locks.py`) around every use.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from meith_core import PRIVATE_FILE_MODE, ensure_private_dir, write_file_beneath

MAX_STEPS: Final = 50
_SUFFIX: Final = ".step"
#: Longest header line read back (a path and a few hashes).
_MAX_HEADER: Final = 64 * 1024


@dataclass(frozen=True, slots=True)
class Step:
    """One change: the sha256 of the content before it (None: the change created the
    file), the file's mode then, and the sha256 of the content the change left."""

    before: str | None
    mode: int | None
    after: str
    tool: str
    ts: int
    name: str = ""  # the step's file

    def header(self, path: Path) -> bytes:
        data: dict[str, Any] = {
            "path": os.fsdecode(path),
            "before": self.before,
            "mode": self.mode,
            "after": self.after,
            "tool": self.tool,
            "ts": self.ts,
        }
        return json.dumps(data, ensure_ascii=True).encode("ascii") + b"\n"


class UndoStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        #: Directories made and checked already (each once per runtime, not per change).
        self._ensured: set[Path] = set()

    def _ensure(self, directory: Path) -> None:
        if directory not in self._ensured:
            ensure_private_dir(directory)
            self._ensured.add(directory)

    def _dir(self, path: Path) -> Path:
        return self.root / hashlib.sha256(os.fsencode(path)).hexdigest()[:32]

    def _names(self, path: Path) -> list[str]:
        try:
            names = os.listdir(self._dir(path))
        except OSError:
            return []
        return sorted(n for n in names if n.endswith(_SUFFIX) and not n.startswith("."))

    def count(self, path: Path) -> int:
        return len(self._names(path))

    def ever_kept(self, path: Path) -> bool:
        """Whether a step was ever kept for `path` (its steps may all be undone since)."""
        return self._dir(path).is_dir()

    def last(self, path: Path) -> Step | None:
        """The newest step, or None (a step that cannot be read is dropped)."""
        for name in reversed(self._names(path)):
            step = self._read_header(path, name)
            if step is not None:
                return step
            with contextlib.suppress(OSError):
                os.unlink(self._dir(path) / name)
        return None

    def _read_header(self, path: Path, name: str) -> Step | None:
        try:
            with open(self._dir(path) / name, "rb") as fh:
                raw = json.loads(fh.readline(_MAX_HEADER))
        except (OSError, ValueError):
            return None
        if not isinstance(raw, dict) or raw.get("path") != os.fsdecode(path):
            return None
        return Step(
            before=raw["before"] if isinstance(raw.get("before"), str) else None,
            mode=raw["mode"] if isinstance(raw.get("mode"), int) else None,
            after=str(raw.get("after")),
            tool=str(raw.get("tool") or ""),
            ts=int(raw.get("ts") or 0),
            name=name,
        )

    def content(self, path: Path, step: Step) -> bytes:
        """The content before `step` (OSError or ValueError when it cannot be read whole)."""
        with open(self._dir(path) / step.name, "rb") as fh:
            fh.readline(_MAX_HEADER)
            data = fh.read()
        if step.before is not None and hashlib.sha256(data).hexdigest() != step.before:
            raise ValueError("the saved version does not match its hash")
        return data

    def push(
        self,
        path: Path,
        before: bytes | None,
        before_sha: str | None,
        mode: int | None,
        after: str,
        tool: str,
    ) -> tuple[Step, int]:
        """Record a change (`before_sha`: the sha256 of `before`, which the caller has
        already); returns the step and how many steps the file now has."""
        try:
            return self._push(path, before, before_sha, mode, after, tool)
        except FileNotFoundError:
            # The store was removed under a running runtime: make it again, once.
            self._ensured.clear()
            return self._push(path, before, before_sha, mode, after, tool)

    def _push(
        self,
        path: Path,
        before: bytes | None,
        sha: str | None,
        mode: int | None,
        after: str,
        tool: str,
    ) -> tuple[Step, int]:
        self._ensure(self.root)
        directory = self._dir(path)
        self._ensure(directory)
        names = self._names(path)
        seq = int(names[-1].removesuffix(_SUFFIX)) + 1 if names else 1
        name = f"{seq:012d}{_SUFFIX}"
        step = Step(sha, mode, after, tool, int(time.time() * 1000), name)
        # Not flushed to the disk: the edit itself is (writer.replace_file), and an undo step
        # needs to survive restarts of the runtime, which it does from the page cache. A power
        # cut may lose the newest steps; a torn one is refused (`content` checks its hash).
        write_file_beneath(
            directory,
            name,
            step.header(path) + (before or b""),
            mode=PRIVATE_FILE_MODE,
            durable=False,
        )
        names.append(name)
        for old in names[:-MAX_STEPS]:
            with contextlib.suppress(OSError):
                os.unlink(directory / old)
        return step, min(len(names), MAX_STEPS)

    def pop(self, path: Path, step: Step) -> int:
        """Forget `step` (it was undone, or its change failed); returns how many are left."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._dir(path) / step.name)
        return self.count(path)
