"""A confined process writes a file outside its directory."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab


def _write(lab: Lab, *, confined: bool) -> Seen:
    ws, out = lab.dir("write-outside"), lab.dir("write-outside", outside=True)
    done = lab.agent(ws, confined=confined).run(f"echo planted > {out}/planted")
    return Seen((out / "planted").exists(), f"exit {done['exitCode']} {done['stderr'].strip()}")


ENTRY = Entry(
    id="write-outside-directory",
    wall="writes",
    attack="An agent holding `starts-process --cwd WS` runs `echo planted > OUTSIDE/planted`.",
    assertion="no file appears outside WS",
    control=partial(_write, confined=False),
    trick=partial(_write, confined=True),
    needs=Needs(plugins=("process",), walls=("writes",)),
)
