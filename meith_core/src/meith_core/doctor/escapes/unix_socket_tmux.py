"""A confined process has the user's tmux server run a command: unconfined, as the user."""

from __future__ import annotations

import subprocess
from functools import partial

from meith_core.doctor.agent import until
from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab


def _tmux(lab: Lab, *, confined: bool) -> Seen:
    ws, out = lab.dir("tmux"), lab.dir("tmux", outside=True)
    sock = out / "tmux.sock"
    base = ["tmux", "-S", str(sock), "-f", "/dev/null"]
    subprocess.run(
        [*base, "new-session", "-d", "-s", "doctor", "sleep 600"],
        env=lab.env,
        check=True,
        timeout=30,
    )
    try:
        pid = subprocess.run(
            [*base, "display", "-p", "#{pid}"],
            env=lab.env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        if pid.stdout.strip().isdigit():
            lab.track(int(pid.stdout))
        canary = out / "ran"
        done = lab.agent(ws, confined=confined).run(
            f"tmux -S {sock} new-window -d 'touch {canary}'; echo $?"
        )
        if done["stdout"].strip() == "0":  # accepted: the window's command is starting
            until(canary.exists, 30, "the tmux window's command")
        return Seen(
            canary.exists(),
            f"tmux exit {done['stdout'].strip()} {done['stderr'].strip()}"
            + ("; the command ran outside" if canary.exists() else ""),
        )
    finally:
        subprocess.run([*base, "kill-server"], env=lab.env, capture_output=True, timeout=30)


ENTRY = Entry(
    id="unix-socket-tmux",
    wall="unix-sockets",
    attack="The user's tmux server runs; an agent holding `starts-process --cwd WS` runs "
    "`tmux -S SOCKET new-window -d 'touch OUTSIDE/ran'`.",
    assertion="the window is never made: the server's socket is out of reach",
    control=partial(_tmux, confined=False),
    trick=partial(_tmux, confined=True),
    needs=Needs(plugins=("process",), programs=("tmux",), walls=("writes",)),
)
