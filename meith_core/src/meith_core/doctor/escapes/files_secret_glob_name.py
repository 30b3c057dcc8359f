"""A secret path whose name holds glob characters (`vault[1]`) is shown by the listing and
search tools, which handed names to ripgrep as patterns."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import leaks


def _list(lab: Lab, *, caller: str) -> Seen:
    ws = lab.root / "glob"
    agent = lab.agent(ws, "none", caller=caller)
    return leaks(
        agent,
        "vault[1]",
        [
            ("workspace_list_files", {"cwd": str(ws)}),
            ("workspace_search", {"cwd": str(ws), "query": "token"}),
        ],
    )


ENTRY = Entry(
    id="files-secret-glob-name",
    wall="secrets",
    attack="The user lists `WS/vault[1]` as a secret path; an agent working in WS calls "
    "`workspace_list_files` and `workspace_search token`.",
    assertion="neither shows anything of `vault[1]`",
    control=partial(_list, caller="cli"),
    trick=partial(_list, caller="agent"),
    needs=Needs(plugins=("files",)),
)
