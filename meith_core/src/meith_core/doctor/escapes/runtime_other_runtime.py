"""A confined process asks another runtime of the same user to start an unconfined process:
by that runtime's socket path, through a hard link to it, and through the real CLI."""

from __future__ import annotations

import json
import os

from meith_core.doctor.agent import until
from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.programs import script
from meith_core.doctor.served import meith_command

_ASK = """
import json, os, sys
from meith_core.client import Client
sock, target = sys.argv[1:3]
os.environ.pop("MEITH_SESSION_TOKEN", None)
try:
    with Client(sock, caller="cli", cwd=os.path.dirname(target), connect_timeout=10) as c:
        r = c.call("start_dev_server", {"cwd": os.path.dirname(target), "command": f"touch {target}"})
        print("answered", json.dumps(r.to_wire())[:300])
except Exception as exc:
    print("refused", exc)
"""


def _other(lab: Lab, *, confined: bool) -> Seen:
    other = lab.second_runtime()
    out = lab.dir("other-runtime", outside=True)
    ws = lab.dir("other-runtime")
    link = ws / "other.sock"
    os.link(other.socket, link)
    ask = script(ws, "ask.py", _ASK)
    cli = " ".join(meith_command())
    arguments = json.dumps({"cwd": str(out), "command": f"touch {out}/cli"})
    steps = [
        f"{ask} {other.socket} {out}/direct",
        f"{ask} {link} {out}/linked",
        f"env -u MEITH_SESSION_TOKEN MEITH_SOCKET={link} {cli} call start_dev_server "
        f"--arg-json '{arguments}' --json",
    ]
    if not confined:
        # As the local user: the door is open (the grant is the other runtime's own).
        with other.client("cli", cwd=str(out)) as client:
            client.call("start_dev_server", {"cwd": str(out), "command": f"touch {out}/user"})
        until(lambda: (out / "user").exists(), 30, "the other runtime's process")
        return Seen(True, "the local user's call to the other runtime started a process outside")
    said = lab.agent(ws).run("; ".join(steps))["stdout"]
    made = sorted(p.name for p in out.iterdir())
    started = '"ok": true' in said
    return Seen(bool(made) or started, f"made outside: {made}; {said.strip()[:700]}")


def _grant_on_other(lab: Lab) -> None:
    from meith_core.host.trust_edits import TrustEditor
    from meith_core.policy.grants import new_grant

    other = lab.second_runtime()
    editor = TrustEditor(other.home, "meith doctor (its own runtime)")
    if not other.home.grants_path.exists():
        editor.add_grant(new_grant("cli", ["starts-process"], source="standing"))


def _control(lab: Lab) -> Seen:
    _grant_on_other(lab)
    return _other(lab, confined=False)


def _attack(lab: Lab) -> Seen:
    _grant_on_other(lab)
    return _other(lab, confined=True)


ENTRY = Entry(
    id="runtime-other-runtime",
    wall="runtimes",
    attack="Runtime B lets the local user start anything. An agent of runtime A holding "
    "`starts-process --cwd WS` asks B, claiming `cli`, to start `touch OUTSIDE/x`: at B's "
    "socket path, through a hard link to it in WS, and with the real `meith call`.",
    assertion="B starts nothing for it (B's socket is hidden, and B refuses a peer in another "
    "user namespace without B's session token)",
    control=_control,
    trick=_attack,
    needs=Needs(plugins=("process",), walls=("runtimes",)),
)
