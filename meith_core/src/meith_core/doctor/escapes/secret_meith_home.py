"""A confined process reads the runtime's trust root (its grants)."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import read_as_process


def _grants(lab: Lab, *, confined: bool) -> Seen:
    path = lab.runtime.home.grants_path
    return read_as_process(lab, path=str(path), confined=confined, marker='"grants"')


ENTRY = Entry(
    id="secret-meith-home",
    wall="secrets",
    attack="An agent holding `starts-process --cwd WS` runs `cat MEITH_HOME/grants.json`: "
    "who may do what, and which directories are open.",
    assertion="nothing of the file comes out (every meith home is covered)",
    control=partial(_grants, confined=False),
    trick=partial(_grants, confined=True),
    needs=Needs(plugins=("process",), walls=("secrets",)),
)
