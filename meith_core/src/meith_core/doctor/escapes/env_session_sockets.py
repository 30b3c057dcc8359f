"""A confined process inherits the runtime's ways to the user's agents, bus and display
(`SSH_AUTH_SOCK`, `DBUS_SESSION_BUS_ADDRESS`, `DISPLAY`, `TMUX`)."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab

_NAMES = ("SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "TMUX")


def _env(lab: Lab, *, confined: bool) -> Seen:
    show = "; ".join(f'echo "{n}=${{{n}:-}}"' for n in _NAMES)
    said = lab.agent(lab.dir("session-env"), confined=confined).run(show)["stdout"]
    passed = [line for line in said.splitlines() if not line.endswith("=")]
    return Seen(bool(passed), "passed on: " + (", ".join(passed) or "none"))


ENTRY = Entry(
    id="env-session-sockets",
    wall="environment",
    attack="The runtime runs in a desktop session (SSH_AUTH_SOCK, DBUS_SESSION_BUS_ADDRESS, "
    "DISPLAY, TMUX set); an agent holding `starts-process --cwd WS` prints them.",
    assertion="a confined process gets none of them",
    control=partial(_env, confined=False),
    trick=partial(_env, confined=True),
    needs=Needs(plugins=("process",), walls=("writes",)),
)
