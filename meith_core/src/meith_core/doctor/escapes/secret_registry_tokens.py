"""A confined process reads the package registries' tokens: a grant meant for `npm install`
then carries an `npm publish` of the user's package."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs
from meith_core.doctor.probes import read_as_process

ENTRY = Entry(
    id="secret-registry-tokens",
    wall="secrets",
    attack="An agent holding `starts-process --cwd WS` runs `cat ~/.npmrc ~/.pypirc`.",
    assertion="neither token comes out (the registries' credentials are secret paths)",
    control=partial(read_as_process, path="~/.npmrc ~/.pypirc", confined=False),
    trick=partial(read_as_process, path="~/.npmrc ~/.pypirc", confined=True),
    needs=Needs(plugins=("process",), walls=("secrets",)),
)
