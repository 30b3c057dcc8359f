"""A command leaves a background process running when it exits."""

from __future__ import annotations

import secrets
from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import running, sleeper
from meith_core.doctor.served import end_processes


def _left(lab: Lab, *, confined: bool) -> Seen:
    ws = lab.dir("background")
    token = f"meith-doctor-{secrets.token_hex(6)}"
    line = f"{sleeper(token)} > /dev/null 2>&1 &"
    if confined:
        lab.agent(ws).run(line)
    else:
        lab.sh(line, ws)
    left = running(token)
    end_processes(left)
    return Seen(
        bool(left),
        f"the background sleeper {'still ran' if left else 'was gone'} when the call answered",
    )


ENTRY = Entry(
    id="lifetime-background-child",
    wall="lifetime",
    attack='An agent holding `starts-process --cwd WS` calls `run_command "sleep 300 &"`.',
    assertion="the sleeper is gone when the call answers",
    control=partial(_left, confined=False),
    trick=partial(_left, confined=True),
    needs=Needs(plugins=("process",), walls=("writes",)),
)
