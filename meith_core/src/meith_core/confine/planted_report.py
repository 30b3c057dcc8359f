"""What a planted-git scan found and changed: one finding per gitdir, and the report."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class PlantedGit:
    """One piece of git metadata that appeared or changed beneath a confined directory."""

    #: The gitdir (or the `.git` pointer / symlink itself when that is what was found).
    path: str
    #: ".git directory", "pointer", ".git symlink", "gitdir", "bare lookalike", "worktree
    #: gitdir", or "hooks directory" (one a repository's `core.hooksPath` names).
    kind: str
    #: What was changed, one sentence each; empty when nothing needed changing.
    changes: tuple[str, ...] = ()
    #: The `.git` pointer file or symlink that led here, if any.
    via: str | None = None

    @property
    def neutralised(self) -> bool:
        return bool(self.changes)

    def message(self) -> str:
        where = f"{self.kind} {self.path}" + (f" (via {self.via})" if self.via else "")
        if not self.changes:
            return f"git metadata appeared or changed at {where}; nothing in it runs programs"
        return f"neutralised planted git metadata at {where}: " + "; ".join(self.changes)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "kind": self.kind, "changes": list(self.changes)}
        if self.via:
            out["via"] = self.via
        return out


@dataclass(frozen=True, slots=True)
class PlantedGitReport:
    """What one scan found and changed."""

    findings: tuple[PlantedGit, ...] = ()
    #: False when the walk stopped at its budget (`note` says where).
    complete: bool = True
    examined: int = 0
    note: str | None = None

    @property
    def neutralised(self) -> tuple[PlantedGit, ...]:
        return tuple(f for f in self.findings if f.neutralised)

    def __bool__(self) -> bool:
        return bool(self.findings) or not self.complete

    def diagnostics(self) -> list[dict[str, str]]:
        """One diagnostic per finding (`warn` when something was changed), and one when the
        walk was incomplete."""
        out = [
            {"level": "warn" if f.neutralised else "info", "message": f.message()}
            for f in self.findings
        ]
        if not self.complete:
            out.append({"level": "warn", "message": self.note or "git metadata scan incomplete"})
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "findings": [f.to_dict() for f in self.findings],
            "complete": self.complete,
            "examined": self.examined,
            **({"note": self.note} if self.note else {}),
        }


__all__ = ["PlantedGit", "PlantedGitReport"]
