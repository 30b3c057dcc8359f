"""Undo steps: the version of a file before each change made through meith.

Kept under the plugin's private directory in MEITH_HOME (`state/files/undo/`, 0700, files
0600) so they survive a runtime restart: one directory per file (named by a hash of its
path) holding `index.json` and the earlier contents by their sha256. At most `MAX_STEPS` a
file; the oldest go first. Callers hold the file's lock (see `locks.py`) around every use.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from meith_core import PRIVATE_FILE_MODE, ensure_private_dir, read_json, write_file_beneath
from meith_core import write_json_atomic as _write_json

MAX_STEPS: Final = 50
_INDEX: Final = "index.json"


@dataclass(frozen=True, slots=True)
class Step:
    """One change: the content before it (None: the change created the file), its mode, and
    the sha256 of the content it left."""

    before: str | None
    mode: int | None
    after: str
    tool: str
    ts: int

    def to_json(self) -> dict[str, Any]:
        return {
            "before": self.before,
            "mode": self.mode,
            "after": self.after,
            "tool": self.tool,
            "ts": self.ts,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Step:
        return cls(
            before=raw["before"] if isinstance(raw.get("before"), str) else None,
            mode=raw["mode"] if isinstance(raw.get("mode"), int) else None,
            after=str(raw["after"]),
            tool=str(raw.get("tool") or ""),
            ts=int(raw.get("ts") or 0),
        )


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

    def steps(self, path: Path) -> list[Step]:
        data = read_json(self._dir(path) / _INDEX)
        if not isinstance(data, dict) or data.get("path") != os.fsdecode(path):
            return []
        out = []
        for raw in data.get("steps") or []:
            try:
                out.append(Step.from_json(raw))
            except (KeyError, TypeError, ValueError):
                continue
        return out

    def blob(self, path: Path, sha: str) -> bytes:
        with open(self._dir(path) / sha, "rb") as fh:
            return fh.read()

    def push(
        self, path: Path, before: bytes | None, mode: int | None, after: str, tool: str
    ) -> int:
        """Record a change; returns how many steps the file now has."""
        try:
            return self._push(path, before, mode, after, tool)
        except FileNotFoundError:
            # The store was removed under a running runtime: make it again, once.
            self._ensured.clear()
            return self._push(path, before, mode, after, tool)

    def _push(
        self, path: Path, before: bytes | None, mode: int | None, after: str, tool: str
    ) -> int:
        self._ensure(self.root)
        directory = self._dir(path)
        self._ensure(directory)
        sha = None
        if before is not None:
            sha = hashlib.sha256(before).hexdigest()
            if not (directory / sha).exists():
                write_file_beneath(directory, sha, before, mode=PRIVATE_FILE_MODE)
        step = Step(sha, mode, after, tool, int(time.time() * 1000))
        steps = [*self.steps(path), step][-MAX_STEPS:]
        self._save(path, steps)
        return len(steps)

    def pop(self, path: Path) -> int:
        """Forget the newest step (it was undone); returns how many are left."""
        steps = self.steps(path)[:-1]
        self._save(path, steps)
        return len(steps)

    def _save(self, path: Path, steps: list[Step]) -> None:
        directory = self._dir(path)
        _write_json(
            directory / _INDEX,
            {"path": os.fsdecode(path), "steps": [s.to_json() for s in steps]},
        )
        keep = {s.before for s in steps if s.before is not None} | {_INDEX}
        with contextlib.suppress(OSError):
            for name in os.listdir(directory):
                if name not in keep and not name.startswith("."):
                    with contextlib.suppress(OSError):
                        os.unlink(directory / name)
