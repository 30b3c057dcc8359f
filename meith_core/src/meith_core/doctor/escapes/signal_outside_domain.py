"""A confined process kills a process outside its domain (the runtime, the user's editor)."""

from __future__ import annotations

import subprocess
from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab


def _kill(lab: Lab, *, confined: bool) -> Seen:
    victim = subprocess.Popen(["sleep", "300"])
    lab.track(victim.pid)
    try:
        done = lab.agent(lab.dir("signal"), confined=confined).run(f"kill -9 {victim.pid}; echo $?")
        if done["stdout"].strip() == "0":  # sent: the victim is dying
            try:
                victim.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        died = victim.poll() is not None
    finally:
        victim.kill()
        victim.wait()
    return Seen(
        died,
        f"kill exit {done['stdout'].strip()} {done['stderr'].strip()}; "
        + ("the victim died" if died else "the victim lives"),
    )


ENTRY = Entry(
    id="signal-outside-domain",
    wall="signals",
    attack="The user runs a process; an agent holding `starts-process --cwd WS` runs "
    "`kill -9 PID` on it.",
    assertion="the process lives (signals are scoped to the confined domain)",
    control=partial(_kill, confined=False),
    trick=partial(_kill, confined=True),
    needs=Needs(plugins=("process",), walls=("signals",)),
)
