"""A confined process reads a `.env` inside its own directory, which the files tools hide
from the same agent."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import read_as_process


def _dotenv(lab: Lab, *, confined: bool) -> Seen:
    ws = lab.dir("dotenv")
    (ws / ".env").write_text(f"API_TOKEN={lab.secret}\n")
    return read_as_process(lab, path=".env", confined=confined, scope=ws)


ENTRY = Entry(
    id="secret-dotenv-confined",
    wall="secrets",
    attack="WS holds `.env` with an API token; an agent holding `starts-process --cwd WS` "
    "runs `cat .env`.",
    assertion="nothing of the token comes out (files matching the secret patterns are hidden "
    "from confined processes as from the files tools)",
    control=partial(_dotenv, confined=False),
    trick=partial(_dotenv, confined=True),
    needs=Needs(plugins=("process",), walls=("secrets",)),
)
