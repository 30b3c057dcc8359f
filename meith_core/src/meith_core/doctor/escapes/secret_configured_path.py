"""A confined process reads a path the user added to the secret paths."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import read_as_process


def _vault(lab: Lab, *, confined: bool) -> Seen:
    return read_as_process(lab, path=str(lab.root / "vault" / "token"), confined=confined)


ENTRY = Entry(
    id="secret-configured-path",
    wall="secrets",
    attack="The user lists VAULT in `confinement.secretPaths`; an agent holding "
    "`starts-process --cwd WS` runs `cat VAULT/token`.",
    assertion="nothing of the token comes out",
    control=partial(_vault, confined=False),
    trick=partial(_vault, confined=True),
    needs=Needs(plugins=("process",), walls=("secrets",)),
)
