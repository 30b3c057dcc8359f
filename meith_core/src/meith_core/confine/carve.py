"""Landlock rules that cover a directory except what is protected beneath it.

Landlock rules only add access: to leave a protected path out of a granted directory, the
directory's other entries are granted one by one, descending only along the way to what is
protected (so the cost is one listing per level on that way, not a walk of the tree).
"""

from __future__ import annotations

import os


def carve(root: str, protected: list[str]) -> tuple[list[str], list[str]]:
    """Rules that cover `root` except the `protected` paths beneath it."""
    if not protected:
        return [root], []
    if any(p == root for p in protected):
        return [], []
    dirs: list[str] = []
    files: list[str] = []
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return [], []
    # `root` and `protected` are resolved; each protected path is filed under the entry of
    # `root` it lies in, so each level costs one pass over the paths, not entries x paths.
    beneath: dict[str, list[str]] = {}
    prefix = root if root.endswith("/") else root + "/"
    for p in protected:
        if p.startswith(prefix):
            beneath.setdefault(p[len(prefix) :].split("/", 1)[0], []).append(p)
    for entry in entries:
        path = entry.path
        if entry.is_symlink():
            continue  # a rule follows the link: it could name any directory
        inner = beneath.get(entry.name)
        if inner:
            sub_dirs, sub_files = carve(path, inner)
            dirs += sub_dirs
            files += sub_files
        elif entry.is_dir():
            dirs.append(path)
        else:
            files.append(path)
    return dirs, files


__all__ = ["carve"]
