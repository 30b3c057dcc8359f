"""A socket caller with a grant changes policy through `set_app_settings`: empties the secret
paths, or lets the browser open `file:` URLs."""

from __future__ import annotations

import json

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab


def _settings(lab: Lab) -> str:
    return lab.runtime.home.settings_path.read_text()


def _user(lab: Lab) -> Seen:
    # The local user's door: the same value written again, so nothing changes.
    current = json.loads(_settings(lab))["confinement"]["secretPaths"]
    done = lab.cli("settings", "set", "confinement.secretPaths", json.dumps(current))
    return Seen(
        done.returncode == 0, f"`meith settings set confinement.secretPaths` exit {done.returncode}"
    )


def _agent(lab: Lab) -> Seen:
    before = _settings(lab)
    agent = lab.agent(lab.dir("settings"), "writes-files", confined=False)
    said = []
    changes: list[dict[str, dict[str, list[str]]]] = [
        {"confinement": {"secretPaths": []}},
        {"browser": {"extraSchemes": ["file"]}},
        {"no-such-plugin": {"anything": []}},
    ]
    for change in changes:
        result = agent.call("set_app_settings", {"settings": change})
        said.append(
            f"{json.dumps(change)}: {result.error.message[:150] if result.error else 'applied'}"
        )
    return Seen(_settings(lab) != before, "; ".join(said))


ENTRY = Entry(
    id="trust-root-policy-settings",
    wall="trust-root",
    attack="An agent holding an unconfined `writes-files` calls `set_app_settings` to empty "
    "`confinement.secretPaths`, to add `file` to the browser's URL schemes, and to write a "
    "section no loaded plugin registered.",
    assertion="all are refused: policy, and what no plugin declared, is changed by the local "
    "user's CLI only",
    control=_user,
    trick=_agent,
    needs=Needs(),
)
