"""A confined process writes into another session's meith terminal."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.agent import until
from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab


def _inject(lab: Lab, *, confined: bool) -> Seen:
    other = lab.agent(lab.dir("other-terminal"), confined=False)
    term = other.content("create_terminal", {"cwd": str(other.scope), "shell": "/bin/sh"})
    tty_file = other.scope / "tty"
    other.content("write_terminal", {"terminalId": term["id"], "data": f"tty > {tty_file}\r"})
    tty = until(lambda: tty_file.exists() and tty_file.read_text().strip(), 30, "the other tty")
    ws = lab.dir("inject")
    done = lab.agent(ws, confined=confined).run(f"echo meith-doctor-injected > {tty}; echo $?")
    # The line goes to the terminal's screen: its output, as its owner reads it.
    seen = other.logs(term["id"])
    injected = "meith-doctor-injected" in seen
    return Seen(
        injected,
        f"{tty}: exit {done['stdout'].strip()} {done['stderr'].strip()}; "
        + ("the owner's terminal shows the line" if injected else "nothing shown"),
    )


ENTRY = Entry(
    id="terminal-other-session",
    wall="terminals",
    attack="Another agent session has a meith terminal on /dev/pts/M; an agent holding "
    "`starts-process --cwd WS` runs `echo text > /dev/pts/M`.",
    assertion="nothing reaches the other session's terminal",
    control=partial(_inject, confined=False),
    trick=partial(_inject, confined=True),
    needs=Needs(plugins=("process",), walls=("terminals",)),
)
