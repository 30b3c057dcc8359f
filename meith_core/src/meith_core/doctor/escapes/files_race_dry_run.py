"""A process beside the agent swaps a directory of the workspace with a link outside, in a loop,
while the agent asks for a patch's dry run through it: a check by name, then a read by name,
printed what is outside in the diff (and a wrong guess answered "not found": an oracle)."""

from __future__ import annotations

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.escapes.files_race_read import CALLS, _by_name, _swapped
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import swapping


def _agent(lab: Lab) -> Seen:
    ws, _out = _swapped(lab)
    agent = lab.agent(ws, "writes-files")
    edit = {"oldText": "\n", "newText": "\n\n"}
    with swapping(ws / "sub", ws / "link", ws / "stop"):
        for i in range(CALLS):
            result = agent.call(
                "workspace_apply_patch",
                {"cwd": str(ws), "path": "sub/id", "edits": [edit], "dryRun": True},
            )
            shown = str(result.content) + (result.error.message if result.error else "")
            if lab.secret in shown:
                return Seen(True, f"dry run {i + 1} printed the outside file: {shown[:300]}")
    return Seen(False, f"{CALLS} dry runs never printed the outside file")


ENTRY = Entry(
    id="files-race-dry-run",
    wall="files-tools",
    attack="WS/sub and WS/link (a link outside) are swapped in a loop by another process while "
    f"an agent holding `writes-files --cwd WS` asks {CALLS} dry runs of a patch to sub/id.",
    assertion="no dry run shows the outside file (files are opened once, by descriptor, "
    "beneath the workspace)",
    control=_by_name,
    trick=_agent,
    needs=Needs(plugins=("files",)),
)
