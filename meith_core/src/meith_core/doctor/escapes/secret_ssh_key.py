"""A confined process reads the user's ssh key."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs
from meith_core.doctor.probes import read_as_process

ENTRY = Entry(
    id="secret-ssh-key",
    wall="secrets",
    attack="An agent holding `starts-process --cwd WS` runs `cat ~/.ssh/id_ed25519`.",
    assertion="nothing of the key comes out (the secret paths are covered)",
    control=partial(read_as_process, path="~/.ssh/id_ed25519", confined=False),
    trick=partial(read_as_process, path="~/.ssh/id_ed25519", confined=True),
    needs=Needs(plugins=("process",), walls=("secrets",)),
)
