"""A confined process writes a hook and a config key into the user's existing repository."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs
from meith_core.doctor.probes import planted

_PREPARE = "git init -q repo && touch repo/a && git -C repo add a"
_PLANT = (
    "printf '#!/bin/sh\\ntouch CANARY\\n' > repo/.git/hooks/pre-commit; "
    "chmod +x repo/.git/hooks/pre-commit; git -C repo config core.fsmonitor 'touch CANARY'"
)
_THEN = (("repo", "status"), ("repo", "commit", "-q", "-m", "user's commit"))

ENTRY = Entry(
    id="planted-git-existing-repo",
    wall="planted-git",
    attack="WS holds the user's repository; an agent holding `starts-process --cwd WS` writes "
    "`.git/hooks/pre-commit` and sets `core.fsmonitor` in it; the user later runs `git status` "
    "and commits.",
    assertion="the user's git runs nothing planted (existing .git is read-only inside)",
    control=partial(planted, confined=False, plant=_PLANT, then=_THEN, prepare=_PREPARE),
    trick=partial(planted, confined=True, plant=_PLANT, then=_THEN, prepare=_PREPARE),
    needs=Needs(plugins=("process",), programs=("git",), walls=("git-metadata",)),
)
