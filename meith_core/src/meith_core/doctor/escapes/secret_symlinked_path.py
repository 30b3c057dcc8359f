"""A confined process reads a secret path's files where its symbolic link leads
(`~/.kube -> ~/dotfiles/kube`)."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs
from meith_core.doctor.probes import read_as_process

ENTRY = Entry(
    id="secret-symlinked-path",
    wall="secrets",
    attack="`~/.kube` is a link to `~/dotfiles/kube`; an agent holding `starts-process "
    "--cwd WS` runs `cat ~/dotfiles/kube/config`.",
    assertion="nothing of the file comes out (a secret path is secret where it leads)",
    control=partial(read_as_process, path="~/dotfiles/kube/config", confined=False),
    trick=partial(read_as_process, path="~/dotfiles/kube/config", confined=True),
    needs=Needs(plugins=("process",), walls=("secrets",)),
)
