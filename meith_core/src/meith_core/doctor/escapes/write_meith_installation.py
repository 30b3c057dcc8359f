"""A confined process opens meith's own code for writing: the core package and every
plugin's, from a grant whose directory holds them (an editable install, a project venv)."""

from __future__ import annotations

import importlib.util
import os
from functools import partial
from importlib.metadata import entry_points
from pathlib import Path

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import lines
from meith_core.doctor.programs import OPEN, script


def installed_modules() -> list[str]:
    """The `__init__.py` of meith_core and of every installed plugin's package."""
    names = ["meith_core"] + [ep.module.split(".")[0] for ep in entry_points(group="meith.plugins")]
    found = []
    for name in dict.fromkeys(names):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            found.append(spec.origin)
    return found


def _open(lab: Lab, *, confined: bool) -> Seen:
    targets = installed_modules()
    scope = Path(os.path.commonpath([os.path.dirname(t) for t in targets]))
    probe = script(lab.dir("installation", outside=True), "open.py", OPEN)
    done = lab.agent(scope, confined=confined).run(f"{probe} w {' '.join(targets)}")
    opened = lines(done["stdout"], "opened")
    if confined:
        return Seen(bool(opened), done["stdout"] + done["stderr"])
    # Nothing to protect where the user cannot write the installation either.
    return Seen(len(opened) == len(targets), done["stdout"] + done["stderr"])


ENTRY = Entry(
    id="write-meith-installation",
    wall="writes",
    attack="An agent holding `starts-process --cwd DIR`, where DIR holds meith's installed "
    "code (core and plugins, editable or not), opens each package's `__init__.py` for writing.",
    assertion="every open is refused: meith's own code is protected as installed",
    control=partial(_open, confined=False),
    trick=partial(_open, confined=True),
    needs=Needs(plugins=("process",), walls=("writes",)),
)
