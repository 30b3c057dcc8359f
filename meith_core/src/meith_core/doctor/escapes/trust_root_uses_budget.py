"""A grant good for N calls (`--uses N`) is spent N times by every session that connects:
a new connection per call gets a fresh budget."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab

USES = 2
SESSIONS = 4


def _spend(lab: Lab, *, uses: int | None) -> Seen:
    ws = lab.dir("uses")
    first = lab.agent(ws, "writes-files", tool="workspace_write_file", uses=uses)
    allowed = 0
    for i in range(SESSIONS):
        session = first if i == 0 else lab.session("agent", first.label, ws)
        done = session.call(
            "workspace_write_file", {"cwd": str(ws), "path": f"f{i}", "content": "x"}
        )
        allowed += done.ok
    said = f"{allowed} of {SESSIONS} calls, each from a session of its own, were allowed"
    if uses is None:
        return Seen(allowed == SESSIONS, said)
    return Seen(allowed > uses, said)


ENTRY = Entry(
    id="trust-root-uses-budget",
    wall="trust-root",
    attack=f"The user grants an agent `writes-files --uses {USES}`; the agent makes "
    f"{SESSIONS} calls, each on a connection (a session) of its own.",
    assertion=f"only {USES} are allowed: the uses are one budget for every session",
    control=partial(_spend, uses=None),
    trick=partial(_spend, uses=USES),
    needs=Needs(plugins=("files",)),
)
