"""A confined process writes an executable hook into the directory the user's own
`core.hooksPath` names (husky's `.husky/`), an ordinary directory it may write."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs
from meith_core.doctor.probes import planted

_PREPARE = (
    "git init -q repo && git -C repo config core.hooksPath .husky && mkdir repo/.husky && "
    "touch repo/a && git -C repo add a"
)
_PLANT = "printf '#!/bin/sh\\ntouch CANARY\\n' > repo/.husky/pre-commit && chmod +x repo/.husky/pre-commit"
_THEN = (("repo", "commit", "-q", "-m", "user's commit"),)

ENTRY = Entry(
    id="planted-git-hooks-path",
    wall="planted-git",
    attack="The user's repository says `core.hooksPath = .husky`; an agent holding "
    "`starts-process --cwd WS` writes an executable `.husky/pre-commit` that touches "
    "OUTSIDE/ran; the user later commits.",
    assertion="the user's commit runs nothing planted (the hook is made non-executable)",
    control=partial(planted, confined=False, plant=_PLANT, then=_THEN, prepare=_PREPARE),
    trick=partial(planted, confined=True, plant=_PLANT, then=_THEN, prepare=_PREPARE),
    needs=Needs(plugins=("process",), programs=("git",), walls=("writes",)),
)
