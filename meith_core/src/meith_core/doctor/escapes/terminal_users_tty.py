"""A confined process writes into the user's terminal (fake output, keystrokes for a shell
that reads them) and opens it for reading (what the user types: passwords)."""

from __future__ import annotations

import os
from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import lines
from meith_core.doctor.programs import OPEN, script


def _tty(lab: Lab, *, confined: bool) -> Seen:
    ws = lab.dir("tty")
    probe = script(ws, "open.py", OPEN)
    master, slave = os.openpty()
    try:
        tty = os.ttyname(slave)
        done = lab.agent(ws, confined=confined).run(
            f"echo meith-doctor-injected > {tty}; echo write:$?; {probe} r {tty}"
        )
        os.set_blocking(master, False)
        try:
            arrived = os.read(master, 4096)
        except BlockingIOError:
            arrived = b""
    finally:
        os.close(master)
        os.close(slave)
    injected = b"meith-doctor-injected" in arrived
    read = bool(lines(done["stdout"], "opened"))
    return Seen(
        injected or read,
        f"{tty}: written {'and seen' if injected else 'not seen'} by the user, "
        f"{'opened' if read else 'not opened'} for reading: {done['stdout'].strip()} {done['stderr'].strip()}",
    )


ENTRY = Entry(
    id="terminal-users-tty",
    wall="terminals",
    attack="The user works in /dev/pts/N; an agent holding `starts-process --cwd WS` runs "
    "`echo text > /dev/pts/N` and opens it for reading.",
    assertion="nothing reaches the user's terminal and it cannot be opened (only the process's "
    "own terminal is there)",
    control=partial(_tty, confined=False),
    trick=partial(_tty, confined=True),
    needs=Needs(plugins=("process",), walls=("terminals",)),
)
