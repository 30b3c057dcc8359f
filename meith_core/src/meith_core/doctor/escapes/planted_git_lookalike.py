"""A confined process lays out a bare-repository lookalike by hand (`HEAD`, `objects/`,
`refs/`, a `config`), which git takes for a repository when the user runs it there."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs
from meith_core.doctor.probes import planted

_PLANT = (
    "mkdir -p look/objects look/refs/heads && echo 'ref: refs/heads/main' > look/HEAD && "
    "printf '[core]\\n\\tbare = true\\n[alias]\\n\\tst = !touch CANARY\\n' > look/config"
)
_THEN = (("look", "st"),)

ENTRY = Entry(
    id="planted-git-lookalike",
    wall="planted-git",
    attack="An agent holding `starts-process --cwd WS` writes `look/HEAD`, `look/objects/`, "
    "`look/refs/` and a `look/config` with `alias.st = !touch OUTSIDE/ran`; the user later "
    "runs `git st` in WS/look.",
    assertion="the user's git runs nothing planted",
    control=partial(planted, confined=False, plant=_PLANT, then=_THEN),
    trick=partial(planted, confined=True, plant=_PLANT, then=_THEN),
    needs=Needs(plugins=("process",), programs=("git",), walls=("writes",)),
)
