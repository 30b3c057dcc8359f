"""Passwords in command-line forms the redaction did not know reach the audit trail (and the
approval prompts and the OpenTelemetry export that share its summaries)."""

from __future__ import annotations

import json
import secrets

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab

#: Forms with a password where PW stands, as an agent's command would carry them.
FORMS = (
    "sshpass -p PW ssh deploy@example.org",
    "redis-cli -a PW ping",
    "ldapsearch -x -w PW -b dc=example",
    "smbclient //host/share -U user%PW",
    "zip -P PW out.zip file",
    "7z a -pPW out.7z file",
    "echo PW | sudo -S true",
    "curl -u admin -p PW https://example.org",
)


def _recorded(lab: Lab, forms: tuple[str, ...]) -> Seen:
    """Each form sent as a `run_command` the agent has no grant for (refused, and audited):
    which of the words it carried the trail holds."""
    agent = lab.agent(lab.dir("redaction"), "none")
    words = {}
    for form in forms:
        value = f"Pw{secrets.token_hex(8)}"
        words[form] = value
        agent.call("run_command", {"cwd": str(agent.scope), "shell": form.replace("PW", value)})
    trail = json.dumps([r for r in lab.audit_records() if r.get("sessionId") == agent.session_id])
    kept = [form for form, value in words.items() if value in trail]
    return Seen(bool(kept), f"in the trail whole: {kept or 'none'}")


def _plain(lab: Lab) -> Seen:
    # The same words where no program reads a password: the trail keeps command lines whole.
    return _recorded(lab, tuple(f"echo {form.split()[0]} PW" for form in FORMS))


def _secret(lab: Lab) -> Seen:
    return _recorded(lab, FORMS)


ENTRY = Entry(
    id="audit-redaction-forms",
    wall="audit",
    attack="An agent sends commands carrying passwords in forms like `sshpass -p X`, "
    "`redis-cli -a X`, `ldapsearch -w X`, `smbclient -U user%X`, `zip -P X`, `7z -pX`, "
    "`echo X | sudo -S`.",
    assertion="none of the passwords reaches the audit trail",
    control=_plain,
    trick=_secret,
    needs=Needs(plugins=("process",)),
)
