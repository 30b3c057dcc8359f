"""A confined process plants a repository whose remote is an `ext::` command, allowed by
`protocol.allow=always`: the user's (or the editor's automatic) `git fetch` runs it."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs
from meith_core.doctor.probes import planted

_PLANT = (
    "git init -q sub && git -C sub config protocol.allow always && "
    "git -C sub remote add origin 'ext::sh -c touch% CANARY'"
)
_THEN = (("sub", "fetch", "-q", "origin"),)

ENTRY = Entry(
    id="planted-git-transport",
    wall="planted-git",
    attack="An agent holding `starts-process --cwd WS` runs `git init sub`, sets "
    "`protocol.allow always` and a remote `ext::sh -c touch% OUTSIDE/ran`; the user later "
    "runs `git fetch` in WS/sub.",
    assertion="the user's git runs nothing planted (transport-valued keys are neutralised too)",
    control=partial(planted, confined=False, plant=_PLANT, then=_THEN),
    trick=partial(planted, confined=True, plant=_PLANT, then=_THEN),
    needs=Needs(plugins=("process",), programs=("git",), walls=("writes",)),
)
