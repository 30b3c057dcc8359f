"""The one path-containment check. Every tool that confines paths uses this.

Containment is decided on fully resolved paths (symlinks followed, `..` collapsed), compared
component-wise, so `/repo-evil` is not inside `/repo` and a symlink pointing out is caught.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


class PathEscapeError(ValueError):
    """A path that resolves outside the directory it must stay in."""


def _resolve(path: str | os.PathLike[str]) -> str:
    text = os.fspath(path)
    if "\0" in text:
        raise PathEscapeError("path contains a NUL byte")
    return os.path.realpath(text)


def is_within(path: str | os.PathLike[str], base: str | os.PathLike[str]) -> bool:
    """True when `path` resolves to `base` or somewhere below it."""
    try:
        return resolved_within(_resolve(path), _resolve(base))
    except PathEscapeError:
        return False


def resolved_within(target: str, root: str) -> bool:
    """`is_within` for two paths that are already resolved (`os.path.realpath`): string work
    only, for checking many paths against many bases without resolving each pair again."""
    if target == root:
        return True
    prefix = root if root.endswith("/") else root + "/"
    return target.startswith(prefix)


def outermost(resolved: Iterable[str]) -> list[str]:
    """The resolved paths that lie inside no other path of `resolved` (first-seen order, no
    repeats). Linear in the number of paths times their depth: each path's ancestors are looked
    up in a set, never compared with every other path."""
    unique = list(dict.fromkeys(resolved))
    present = set(unique)
    kept: list[str] = []
    for path in unique:
        parent, child = os.path.dirname(path), path
        while parent != child and parent not in present:
            parent, child = os.path.dirname(parent), parent
        if parent == child:  # reached the root without meeting another listed path
            kept.append(path)
    return kept


def resolve_within(base: str | os.PathLike[str], candidate: str | os.PathLike[str]) -> Path:
    """Resolve `candidate` (relative to `base`, or absolute) and require it inside `base`.

    Works for paths that do not exist yet: the deepest existing ancestor is resolved, so a
    symlinked directory on the way cannot smuggle the path out.
    """
    text = os.fspath(candidate)
    if "\0" in text:
        raise PathEscapeError("path contains a NUL byte")
    root = _resolve(base)
    joined = os.path.join(root, text)
    target = os.path.realpath(joined)
    if not (target == root or os.path.commonpath([target, root]) == root):
        raise PathEscapeError(f"{text!r} resolves outside {root}")
    return Path(target)
