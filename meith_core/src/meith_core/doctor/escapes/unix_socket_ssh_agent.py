"""A confined process uses the user's ssh-agent: lists and signs with the user's keys."""

from __future__ import annotations

import subprocess
from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab


def _agent(lab: Lab, *, confined: bool) -> Seen:
    ws, out = lab.dir("ssh-agent"), lab.dir("ssh-agent", outside=True)
    sock, key = out / "agent.sock", out / "id_doctor"
    started = subprocess.run(
        ["ssh-agent", "-a", str(sock), "-s"],
        env=lab.env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    pid = next(
        (
            w.split("=")[1]
            for w in started.stdout.replace(";", " ").split()
            if w.startswith("SSH_AGENT_PID=")
        ),
        "",
    )
    if pid.isdigit():
        lab.track(int(pid))
    try:
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "meith-doctor", "-f", str(key)],
            check=True,
            capture_output=True,
            timeout=30,
        )
        subprocess.run(
            ["ssh-add", str(key)],
            env={**lab.env, "SSH_AUTH_SOCK": str(sock)},
            check=True,
            capture_output=True,
            timeout=30,
        )
        done = lab.agent(ws, confined=confined).run(f"SSH_AUTH_SOCK={sock} ssh-add -l")
        listed = "meith-doctor" in done["stdout"]
        return Seen(
            listed,
            f"ssh-add -l: exit {done['exitCode']} {done['stdout'].strip()} {done['stderr'].strip()}",
        )
    finally:
        if pid.isdigit():
            subprocess.run(["kill", pid], capture_output=True, timeout=30)


ENTRY = Entry(
    id="unix-socket-ssh-agent",
    wall="unix-sockets",
    attack="The user's ssh-agent holds a key; an agent holding `starts-process --cwd WS` runs "
    "`SSH_AUTH_SOCK=SOCKET ssh-add -l` (and could sign, or push with `--net github.com:22`).",
    assertion="the agent's socket is out of reach: no key is listed",
    control=partial(_agent, confined=False),
    trick=partial(_agent, confined=True),
    needs=Needs(
        plugins=("process",), programs=("ssh-agent", "ssh-add", "ssh-keygen"), walls=("writes",)
    ),
)
