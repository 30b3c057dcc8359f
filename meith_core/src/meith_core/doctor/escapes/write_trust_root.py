"""A confined process opens the runtime's grants.json for writing, from a directory grant that
contains the runtime's home."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import lines
from meith_core.doctor.programs import OPEN, script


def _open(lab: Lab, *, confined: bool) -> Seen:
    # The grant's directory holds the runtime's home: carved out, however wide the grant.
    grants = lab.runtime.home.grants_path
    grants.touch()
    probe = script(lab.dir("trust-root", outside=True), "open.py", OPEN)
    done = lab.agent(lab.root, confined=confined).run(f"{probe} w {grants}")
    return Seen(bool(lines(done["stdout"], "opened")), done["stdout"] + done["stderr"])


ENTRY = Entry(
    id="write-trust-root",
    wall="writes",
    attack="An agent holding `starts-process --cwd DIR`, where DIR holds the runtime's "
    "MEITH_HOME, opens `MEITH_HOME/grants.json` for writing.",
    assertion="the open is refused: no grant can be widened from inside",
    control=partial(_open, confined=False),
    trick=partial(_open, confined=True),
    needs=Needs(plugins=("process",), walls=("writes",)),
)
