"""A write and its undo through a directory swapped with a link outside: the undo's removal,
by name, removes the file outside."""

from __future__ import annotations

import os

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import swapping

#: Write-and-undo pairs made while the swap loop runs.
PAIRS = 100


def _by_name(lab: Lab) -> Seen:
    ws, out = lab.dir("race-undo"), lab.dir("race-undo", outside=True)
    (ws / "sub").mkdir()
    (ws / "link").symlink_to(out)
    (out / "keep").write_text("keep\n")
    with swapping(ws / "sub", ws / "link", ws / "stop"):
        for i in range(100 * PAIRS):
            try:
                os.unlink(ws / "sub" / "keep")
            except OSError:
                continue
            return Seen(True, f"a removal by name removed the outside file after {i + 1} tries")
    return Seen(False, "removals by name never reached the outside file")


def _agent(lab: Lab) -> Seen:
    ws, out = lab.dir("race-undo"), lab.dir("race-undo", outside=True)
    (ws / "sub").mkdir()
    (ws / "link").symlink_to(out)
    names = [f"fresh{i}.txt" for i in range(PAIRS)]
    for name in names:
        (out / name).write_text("keep\n")
    agent = lab.agent(ws, "writes-files")
    with swapping(ws / "sub", ws / "link", ws / "stop"):
        for name in names:
            at = {"cwd": str(ws), "path": f"sub/{name}"}
            agent.call("workspace_write_file", {**at, "content": "new\n"})
            agent.call("workspace_undo", {**at, "force": True})
    touched = [n for n in names if not (out / n).exists() or (out / n).read_text() != "keep\n"]
    return Seen(bool(touched), f"{len(touched)} of {PAIRS} files outside removed or changed")


ENTRY = Entry(
    id="files-race-undo",
    wall="files-tools",
    attack="WS/sub and WS/link (a link outside) are swapped in a loop while an agent holding "
    f"`writes-files --cwd WS` writes `sub/freshN.txt` and undoes it (`force`), {PAIRS} times; "
    "OUTSIDE holds files of the same names.",
    assertion="nothing outside is removed or changed",
    control=_by_name,
    trick=_agent,
    needs=Needs(plugins=("files",)),
)
