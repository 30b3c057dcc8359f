"""An agent reads another agent's dev server output (where secrets are typed and printed),
and stops it."""

from __future__ import annotations

import json

from meith_core.doctor.agent import Agent, until
from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab


def _started(lab: Lab) -> tuple[Agent, str]:
    owner = lab.agent(lab.dir("logs-owner"))
    dev = owner.start(f"echo {lab.secret}; sleep 300")
    until(lambda: lab.secret in owner.logs(dev), 30, "the dev server's line")
    return owner, dev


def _user(lab: Lab) -> Seen:
    _owner, dev = _started(lab)
    logs = lab.runtime.content("get_process_logs", {"processId": dev})
    return Seen(lab.secret in json.dumps(logs), "the local user reads the agent's dev server")


def _stranger(lab: Lab) -> Seen:
    owner, dev = _started(lab)
    stranger = lab.agent(lab.dir("logs-stranger"), confined=False)
    said = []
    for tool, args in (
        ("get_process_logs", {"processId": dev}),
        ("list_dev_servers", {}),
        ("stop_dev_server", {"devServerId": dev}),
    ):
        answer = json.dumps(stranger.call(tool, args).to_wire())
        said.append(f"{tool}: {answer[:120]}")
        if lab.secret in answer:
            return Seen(True, f"{tool} showed the output: {answer[:300]}")
    running = any(
        s["id"] == dev and s.get("status") == "running"
        for s in owner.content("list_dev_servers", {})
    )
    return Seen(not running, " | ".join(said) + ("" if running else " | it was stopped"))


ENTRY = Entry(
    id="sessions-dev-server-logs",
    wall="sessions",
    attack="Agent A's dev server prints a secret; agent B, holding an unconfined "
    "`starts-process`, reads its logs, lists the dev servers and stops A's.",
    assertion="B sees nothing of A's output and cannot stop it (the local user may read it)",
    control=_user,
    trick=_stranger,
    needs=Needs(plugins=("process",)),
)
