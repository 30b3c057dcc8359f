"""A confined process plants a `.git` pointer file to a gitdir it made outside its directory
(in /dev/shm), whose `credential.helper` the user's git runs."""

from __future__ import annotations

import secrets
import shutil
from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import planted


def _pointer(lab: Lab, *, confined: bool) -> Seen:
    # Where the planted gitdir goes: a place outside WS that a confined process may write.
    shm = f"/dev/shm/meith-doctor-{secrets.token_hex(6)}"  # noqa: S108
    plant = (
        f"git init -q --bare {shm} && git --git-dir={shm} config core.bare false && "
        f"git --git-dir={shm} config credential.helper '!touch CANARY' && "
        f"mkdir ptr && echo 'gitdir: {shm}' > ptr/.git"
    )
    try:
        return planted(
            lab,
            confined=confined,
            plant=plant,
            then=(("ptr", "credential", "fill"),),
            stdin="protocol=https\nhost=example.org\n\n",
        )
    finally:
        shutil.rmtree(shm, ignore_errors=True)


ENTRY = Entry(
    id="planted-git-pointer",
    wall="planted-git",
    attack="An agent holding `starts-process --cwd WS` makes a gitdir in /dev/shm with "
    "`credential.helper = !touch OUTSIDE/ran` and points `WS/ptr/.git` at it; the user later "
    "runs git there (`git credential fill`).",
    assertion="the user's git runs nothing planted",
    control=partial(_pointer, confined=False),
    trick=partial(_pointer, confined=True),
    needs=Needs(plugins=("process",), programs=("git",), walls=("writes",)),
)
