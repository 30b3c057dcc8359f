"""A confined process plants a repository whose `core.fsmonitor` the user's next `git
status` runs, outside every wall."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs
from meith_core.doctor.probes import planted

_PLANT = "git init -q sub && git -C sub config core.fsmonitor 'touch CANARY'"
_THEN = (("sub", "status"),)

ENTRY = Entry(
    id="planted-git-fsmonitor",
    wall="planted-git",
    attack="An agent holding `starts-process --cwd WS` runs `git init sub && git -C sub config "
    "core.fsmonitor 'touch OUTSIDE/ran'`; the user later runs `git status` in WS/sub.",
    assertion="the user's git runs nothing planted (neutralised when the command exited)",
    control=partial(planted, confined=False, plant=_PLANT, then=_THEN),
    trick=partial(planted, confined=True, plant=_PLANT, then=_THEN),
    needs=Needs(plugins=("process",), programs=("git",), walls=("writes",)),
)
