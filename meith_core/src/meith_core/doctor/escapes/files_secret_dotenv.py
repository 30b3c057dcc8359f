"""An agent's files tools read a `.env` inside its workspace."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import leaks


def _read(lab: Lab, *, caller: str) -> Seen:
    ws = lab.dir("files-dotenv")
    (ws / "app").mkdir()
    (ws / "app" / ".env").write_text(f"API_TOKEN={lab.secret}\n")
    agent = lab.agent(ws, "none", caller=caller)
    return leaks(
        agent,
        lab.secret,
        [
            ("workspace_read_file", {"cwd": str(ws), "path": "app/.env"}),
            ("workspace_search", {"cwd": str(ws), "query": "API_TOKEN"}),
        ],
    )


ENTRY = Entry(
    id="files-secret-dotenv",
    wall="secrets",
    attack="WS holds `app/.env`; an agent working in WS calls `workspace_read_file app/.env` "
    "and `workspace_search API_TOKEN`.",
    assertion="neither shows the token (names matching the secret patterns are hidden)",
    control=partial(_read, caller="cli"),
    trick=partial(_read, caller="agent"),
    needs=Needs(plugins=("files",)),
)
