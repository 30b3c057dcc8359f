"""A confined process plants a repository whose `core.worktree` points outside its directory:
the user's next checkout or `reset --hard` there writes files wherever it names."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs
from meith_core.doctor.probes import planted

#: A repository with a committed file named like the canary, its work tree moved outside.
_PLANT = (
    "git init -q sub && cd sub && echo planted > ran && git add ran && "
    "git -c user.email=a@b.c -c user.name=a commit -qm c && "
    'git config core.worktree "$(dirname CANARY)"'
)
_THEN = (("sub", "reset", "-q", "--hard"),)

ENTRY = Entry(
    id="planted-git-worktree-outside",
    wall="planted-git",
    attack="An agent holding `starts-process --cwd WS` makes WS/sub a repository whose "
    "`core.worktree` is a directory outside WS; the user later runs `git reset --hard` there.",
    assertion="the user's git writes nothing outside WS (a work tree that points outside every "
    "writable directory is removed from planted config)",
    control=partial(planted, confined=False, plant=_PLANT, then=_THEN),
    trick=partial(planted, confined=True, plant=_PLANT, then=_THEN),
    needs=Needs(plugins=("process",), programs=("git",), walls=("writes",)),
)
