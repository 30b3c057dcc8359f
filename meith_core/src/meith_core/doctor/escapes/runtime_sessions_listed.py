"""A confined process lists the runtime's sessions: every other agent's, with its grants."""

from __future__ import annotations

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.programs import script

_LIST = (
    "import os\n"
    "from meith_core.client import Client\n"
    "with Client(os.environ['MEITH_SOCKET'], caller='agent') as c:\n"
    "    c.hello()\n"
    "    print(' '.join(s['sessionId'] for s in c.list_sessions()))\n"
)


def _listing(lab: Lab, *, as_child: bool) -> Seen:
    stranger = lab.agent(lab.dir("stranger"), "writes-files")
    if not as_child:
        with lab.runtime.client("cli") as client:
            listed = " ".join(s["sessionId"] for s in client.list_sessions())
    else:
        ws = lab.dir("lister")
        done = lab.agent(ws).run(script(ws, "list.py", _LIST))
        listed = done["stdout"] + done["stderr"]
    return Seen(stranger.session_id in listed, f"listed: {listed.strip()[-600:]}")


def _user(lab: Lab) -> Seen:
    return _listing(lab, as_child=False)


def _child(lab: Lab) -> Seen:
    return _listing(lab, as_child=True)


ENTRY = Entry(
    id="runtime-sessions-listed",
    wall="runtimes",
    attack="Another agent session holds grants; an agent holding `starts-process --cwd WS` "
    "runs a program that lists the runtime's sessions through its way back.",
    assertion="it sees its own session only (the local user sees all of them)",
    control=_user,
    trick=_child,
    needs=Needs(plugins=("process",), walls=("writes",)),
)
