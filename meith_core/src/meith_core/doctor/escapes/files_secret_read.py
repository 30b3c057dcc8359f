"""An agent's files tools read a secret path inside its own workspace."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import leaks


def _read(lab: Lab, *, caller: str) -> Seen:
    agent = lab.agent(lab.home, "none", caller=caller)
    path = {"cwd": str(lab.home), "path": ".ssh/id_ed25519"}
    return leaks(agent, lab.secret, [("workspace_read_file", path)])


ENTRY = Entry(
    id="files-secret-read",
    wall="secrets",
    attack="An agent whose workspace is the user's home calls `workspace_read_file "
    ".ssh/id_ed25519`.",
    assertion="refused for every caller but the local user (who reads it in the control)",
    control=partial(_read, caller="cli"),
    trick=partial(_read, caller="agent"),
    needs=Needs(plugins=("files",)),
)
