"""A process beside the agent swaps a directory of the workspace with a link to a directory
outside, in a loop (`renameat2(RENAME_EXCHANGE)`), while the agent reads through it: a check by
name, then a use by name, reads what is outside."""

from __future__ import annotations

from pathlib import Path

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import swapping

#: Calls made while the swap loop runs: the check-then-use code leaked about one in a hundred.
CALLS = 300


def _swapped(lab: Lab) -> tuple[Path, Path]:
    ws, out = lab.dir("race-read"), lab.dir("race-read", outside=True)
    (out / "id").write_text(f"outside {lab.secret}\n")
    (ws / "sub").mkdir()
    (ws / "sub" / "id").write_text("decoy\n")
    (ws / "link").symlink_to(out)
    return ws, out


def _by_name(lab: Lab) -> Seen:
    ws, _out = _swapped(lab)
    with swapping(ws / "sub", ws / "link", ws / "stop"):
        for i in range(100 * CALLS):
            try:
                if lab.secret in (ws / "sub" / "id").read_text():
                    return Seen(
                        True, f"a read by name returned the outside file after {i + 1} tries"
                    )
            except OSError:
                continue
    return Seen(False, f"{100 * CALLS} reads by name never returned the outside file")


def _agent(lab: Lab) -> Seen:
    ws, _out = _swapped(lab)
    agent = lab.agent(ws, "none")
    crashed = 0
    with swapping(ws / "sub", ws / "link", ws / "stop"):
        for i in range(CALLS):
            result = agent.call("workspace_read_file", {"cwd": str(ws), "path": "sub/id"})
            if lab.secret in str(result.content):
                return Seen(True, f"call {i + 1} returned the outside file: {result.content}")
            if result.error is not None and "raised" in result.error.message:
                crashed += 1
    return Seen(
        crashed > 0,
        f"{CALLS} reads never returned the outside file"
        + (f"; {crashed} answered with a crash" if crashed else ""),
    )


ENTRY = Entry(
    id="files-race-read",
    wall="files-tools",
    attack="WS/sub and WS/link (a link outside) are swapped in a loop by another process while "
    f"an agent calls `workspace_read_file sub/id` {CALLS} times.",
    assertion="no call returns the outside file, and none crashes (a race is an error that "
    "says so)",
    control=_by_name,
    trick=_agent,
    needs=Needs(plugins=("files",)),
)
