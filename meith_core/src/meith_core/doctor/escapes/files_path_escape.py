"""The files tools are asked for paths that lead out of the workspace: `..`, an absolute
path, and a symbolic link to a directory outside."""

from __future__ import annotations

import os
from pathlib import Path

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import leaks


def _setup(lab: Lab) -> tuple[Path, list[str]]:
    ws, out = lab.dir("escape"), lab.dir("escape", outside=True)
    (out / "notes.txt").write_text(f"private {lab.secret}\n")
    (ws / "door").symlink_to(out)
    return ws, [os.path.relpath(out / "notes.txt", ws), str(out / "notes.txt"), "door/notes.txt"]


def _by_name(lab: Lab) -> Seen:
    ws, paths = _setup(lab)
    text = (ws / paths[-1]).read_text()
    return Seen(lab.secret in text, "opening door/notes.txt by name reads the file outside")


def _agent(lab: Lab) -> Seen:
    ws, paths = _setup(lab)
    agent = lab.agent(ws, "none")
    calls = [("workspace_read_file", {"cwd": str(ws), "path": p}) for p in paths]
    calls += [("workspace_search", {"cwd": str(ws), "query": "private", "path": "door"})]
    return leaks(agent, lab.secret, calls)


ENTRY = Entry(
    id="files-path-escape",
    wall="files-tools",
    attack="An agent working in WS calls `workspace_read_file` with `../…/OUTSIDE/notes.txt`, "
    "an absolute path outside, and `door/notes.txt` where `door` links outside; and searches "
    "`door`.",
    assertion="every one is refused or shows nothing of the file",
    control=_by_name,
    trick=_agent,
    needs=Needs(plugins=("files",)),
)
