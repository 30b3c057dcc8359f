"""A process keeps its session's token after the session ended, and calls with it: as that
session, or as whoever the runtime would take it for."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.agent import until
from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab


def _sessions(lab: Lab) -> list[str]:
    with lab.runtime.client("cli") as client:
        return [str(s["sessionId"]) for s in client.list_sessions()]


def _call(lab: Lab, *, ended: bool) -> Seen:
    ws = lab.dir("token")
    agent = lab.agent(ws, confined=False)
    said = agent.run('printf "%s %s" "$MEITH_SOCKET" "$MEITH_SESSION_TOKEN"')["stdout"]
    socket, token = said.split()
    if ended:
        agent.close()  # its session ends; the token stays with whatever kept it
        until(lambda: agent.session_id not in _sessions(lab), 30, "the session to end")
    done = lab.cli_as_child(socket, token, "call", "app_health", "--json")
    answered = '"ok": true' in done.stdout
    return Seen(
        answered,
        f"`meith call app_health` with the token: exit {done.returncode} "
        + (done.stdout + done.stderr).strip()[-200:],
    )


ENTRY = Entry(
    id="runtime-token-after-end",
    wall="runtimes",
    attack="An agent's process writes down MEITH_SOCKET and MEITH_SESSION_TOKEN; the agent "
    "disconnects (its session ends); the token is used with `meith call`.",
    assertion="the runtime refuses the token once its session ended, never taking it for "
    "anyone else",
    control=partial(_call, ended=False),
    trick=partial(_call, ended=True),
    needs=Needs(plugins=("process",)),
)
