"""Process trees of managed processes, read with psutil (blocking: run in a worker thread)."""

from __future__ import annotations

import contextlib
from typing import Any

import psutil

from meith_plugins_process.killer import identity_matches
from meith_plugins_process.ports import listening_ports

#: A runaway fork loop must not make the answer unbounded.
MAX_NODES = 2000


def _command(proc: psutil.Process) -> str | None:
    with contextlib.suppress(psutil.Error):
        cmdline = proc.cmdline()
        if cmdline:
            return " ".join(cmdline)
        return str(proc.name())
    return None


def process_tree(pid: int | None, create_time: float | None) -> dict[str, Any] | None:
    """`{pid, ppid, command, ports, children: [...]}` for the leader and its descendants, or
    None when the leader is gone (or its pid now belongs to another process)."""
    if pid is None:
        return None
    try:
        root = psutil.Process(pid)
    except psutil.Error:
        return None
    if not identity_matches(root, create_time):
        return None
    budget = [MAX_NODES]

    def node(proc: psutil.Process) -> dict[str, Any]:
        budget[0] -= 1
        try:
            ppid: int | None = proc.ppid()
            kids = proc.children()
        except psutil.Error:
            ppid, kids = None, []
        children = []
        for kid in sorted(kids, key=lambda p: p.pid):
            if budget[0] <= 0:
                break
            with contextlib.suppress(psutil.Error):
                if kid.status() != psutil.STATUS_ZOMBIE:
                    children.append(node(kid))
        return {
            "pid": proc.pid,
            "ppid": ppid,
            "command": _command(proc),
            "ports": listening_ports(proc.pid),
            "children": children,
        }

    with contextlib.suppress(psutil.NoSuchProcess):
        return node(root)
    return None


def tree_ports(tree: dict[str, Any] | None) -> list[int]:
    """Every listening port in a tree, sorted."""
    out: set[int] = set()
    stack = [tree] if tree else []
    while stack:
        n = stack.pop()
        out.update(n["ports"])
        stack.extend(n["children"])
    return sorted(out)


def subtree_ports(pid: int | None, create_time: float | None) -> list[int]:
    """Listening ports of a leader and its descendants (cheaper than a full tree)."""
    if pid is None:
        return []
    try:
        root = psutil.Process(pid)
        if not identity_matches(root, create_time):
            return []
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return []
    out: set[int] = set()
    for proc in procs[:MAX_NODES]:
        out.update(listening_ports(proc.pid))
    return sorted(out)
