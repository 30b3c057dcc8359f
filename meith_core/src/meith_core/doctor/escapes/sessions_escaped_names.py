"""A socket peer chooses the directory it says it works in: escape sequences in it would
reach the local user's terminal through `meith sessions`."""

from __future__ import annotations

from pathlib import Path

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab

HOSTILE = "ws\x1b]0;owned\x07\x1b[2J"


def _peer(lab: Lab) -> None:
    peer = lab.session("agent", "doctor-escapes", Path(lab.dir("escapes")) / HOSTILE)
    peer.call("app_health", {})


def _raw(lab: Lab) -> Seen:
    _peer(lab)
    with lab.runtime.client("cli") as client:
        listed = repr(client.list_sessions())
    return Seen("\\x1b]0;owned" in listed, "the runtime keeps the workspace as the peer sent it")


def _cli(lab: Lab) -> Seen:
    _peer(lab)
    done = lab.cli("sessions")
    raw = "\x1b" in done.stdout
    return Seen(
        raw,
        "`meith sessions` printed "
        + ("a raw escape sequence" if raw else "it escaped")
        + f" (exit {done.returncode})",
    )


ENTRY = Entry(
    id="sessions-escaped-names",
    wall="sessions",
    attack="A socket peer says it works in `ws\\x1b]0;owned\\x07\\x1b[2J`; the local user "
    "runs `meith sessions`.",
    assertion="no escape sequence reaches the user's terminal (control characters are escaped)",
    control=_raw,
    trick=_cli,
    needs=Needs(),
)
