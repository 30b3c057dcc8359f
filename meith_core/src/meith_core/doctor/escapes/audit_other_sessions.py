"""An agent reads every session's audit records (their commands, their paths) with
`get_audit_log`, which needs no grant."""

from __future__ import annotations

import json

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab


def _read(lab: Lab, *, as_agent: bool) -> Seen:
    victim = lab.agent(lab.dir("audit-victim"), "none")
    marker = f"meith-doctor-{victim.label}"
    victim.call("workspace_read_file", {"cwd": str(victim.scope), "path": marker})
    if as_agent:
        reader = lab.agent(lab.dir("audit-reader"), "none")
        entries = reader.content("get_audit_log", {"limit": 200})
    else:
        entries = lab.runtime.content("get_audit_log", {"limit": 200})
    text = json.dumps(entries)
    seen = victim.session_id in text or marker in text
    return Seen(
        seen,
        f"{len(entries['entries'])} records read; the other session's "
        + ("are among them" if seen else "are not"),
    )


def _user(lab: Lab) -> Seen:
    return _read(lab, as_agent=False)


def _agent(lab: Lab) -> Seen:
    return _read(lab, as_agent=True)


ENTRY = Entry(
    id="audit-other-sessions",
    wall="audit",
    attack="Another agent session makes calls; an agent with no grant calls `get_audit_log`.",
    assertion="it reads its own session's records only (the local user reads all of them)",
    control=_user,
    trick=_agent,
    needs=Needs(plugins=("files",)),
)
