"""A process the local user's directory grant started inherits the way back to the runtime
as the local user (MEITH_HOME, MEITH_SOCKET, the user's session token)."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab

_SHOW = 'echo "${MEITH_HOME:-none}:${MEITH_SOCKET:-none}:${MEITH_SESSION_TOKEN:-none}"'


def _env(lab: Lab, *, confined: bool) -> Seen:
    user = lab.agent(lab.dir("callback"), caller="cli", confined=confined)
    said = user.run(_SHOW)["stdout"].strip()
    return Seen(said != "none:none:none", f"MEITH_HOME:MEITH_SOCKET:MEITH_SESSION_TOKEN = {said}")


ENTRY = Entry(
    id="env-user-callback",
    wall="environment",
    attack="The local user's grant `starts-process --cwd WS` runs a command that prints "
    "MEITH_HOME, MEITH_SOCKET and MEITH_SESSION_TOKEN (with them: `meith call` as the user).",
    assertion="a confined process gets none of them",
    control=partial(_env, confined=False),
    trick=partial(_env, confined=True),
    needs=Needs(plugins=("process",), walls=("writes",)),
)
