"""An agent's dev server keeps running after the agent's session ended."""

from __future__ import annotations

import secrets

from meith_core.doctor.agent import until
from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import running, sleeper
from meith_core.doctor.served import LabError

#: What a session started stops within its grace; this bounds the wait, generously.
STOP_WAIT_S = 30.0


def _start(lab: Lab) -> str:
    token = f"meith-doctor-{secrets.token_hex(6)}"
    lab.agent(lab.dir("session-end")).start(f"exec {sleeper(token)}")
    until(lambda: running(token), 30, "the dev server")
    return token


def _while_open(lab: Lab) -> Seen:
    token = _start(lab)
    return Seen(bool(running(token)), "the dev server runs while its session lives")


def _after_close(lab: Lab) -> Seen:
    token = _start(lab)
    lab.settle()  # the agent disconnects: its session ends
    try:
        until(lambda: not running(token), STOP_WAIT_S, "the dev server to stop")
    except LabError:
        return Seen(True, f"the dev server still ran {STOP_WAIT_S:.0f} s after its session ended")
    return Seen(False, "the dev server stopped when its session ended")


ENTRY = Entry(
    id="lifetime-session-end",
    wall="lifetime",
    attack="An agent holding `starts-process --cwd WS` starts a dev server, then disconnects.",
    assertion="the dev server stops when the session ends (unless detached to the local user)",
    control=_while_open,
    trick=_after_close,
    needs=Needs(plugins=("process",)),
)
