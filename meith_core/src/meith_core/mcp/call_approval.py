"""The runtime's call approval requests as MCP elicitations, and the answers back.

Anything but an explicit "allow" from the person at the client is a denial: a decline, a
dismissal, a client that cannot elicit, a malformed answer, or silence (the runtime denies
after its own deadline).
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from meith_core.protocol.call_approval import where_it_runs

ALLOW_ONCE = "allow_once"
ALLOW_SESSION = "allow_session"
DENY = "deny"
_CHOICES = (
    (ALLOW_ONCE, "Allow once"),
    (ALLOW_SESSION, "Allow this tool for the rest of this session"),
    (DENY, "Deny"),
)


def elicitation_message(request: dict[str, Any]) -> str:
    """What the person at the MCP client is asked: the runtime's view of the call, whole
    (`shown` and `command`, rendered once by the core for every approver)."""
    who = str(request.get("label") or "an agent")
    tool = str(request.get("toolName") or "?")
    plugin = str(request.get("plugin") or "?")
    caps = request.get("capabilities")
    caps_text = ", ".join(str(c) for c in caps) if isinstance(caps, list) else "?"
    command = request.get("command")
    shown = request.get("shown")
    heading = "Arguments (shown whole; only secret values masked)"
    if not isinstance(shown, str):  # an older runtime: its arguments as it sent them
        args = request.get("arguments")
        shown = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, indent=1)
        heading = "Arguments (as the runtime sent them)"
    return (
        f'meith: {who} wants to run "{tool}" (plugin {plugin}).\n'
        f"Capabilities: {caps_text}\n"
        f"Where: {_where(request, caps)}\n"
        + (f"Command: {command}\n" if isinstance(command, str) else "")
        + f"{heading}:\n{shown}\n"
        "Allow it?"
    )


def _where(request: dict[str, Any], caps: Any) -> str:
    """Whether the call's process runs confined, and where, as the runtime says it."""
    runs = request.get("runs")
    if isinstance(runs, str) and runs:
        return runs
    # An older runtime: said from the capabilities, the same way the runtime says it.
    return where_it_runs(caps if isinstance(caps, list) else [], str(request.get("cwd") or "?"))


def elicitation_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Decision",
                "oneOf": [{"const": value, "title": title} for value, title in _CHOICES],
                "default": DENY,
            }
        },
        "required": ["decision"],
    }


def elicit_request(request: dict[str, Any]) -> types.ElicitRequest:
    return types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            message=elicitation_message(request), requested_schema=elicitation_schema()
        )
    )


#: Who answered an elicitation, as the bridge reports it (the runtime adds that the bridge
#: said so). A decline is the person's own refusal, and reads as one.
ANSWERED_BY_USER = "the user at the MCP client"
_ANSWERED_BY = {
    "accept": ANSWERED_BY_USER,
    "decline": f"{ANSWERED_BY_USER}, who declined",
    "cancel": f"{ANSWERED_BY_USER}, who dismissed the request",
}


def answered_by(answer: types.ElicitResult | None) -> str:
    """The words for who answered `answer`: the user at the MCP client, and how."""
    if answer is None:
        return "nobody: the MCP client sent no answer"
    return _ANSWERED_BY.get(answer.action, ANSWERED_BY_USER)


def decision_of(answer: types.ElicitResult | None) -> str:
    if answer is None or answer.action != "accept" or not answer.content:
        return DENY
    value = answer.content.get("decision")
    return value if value in (ALLOW_ONCE, ALLOW_SESSION) else DENY


def denial_hint(tool: str, plugin: str | None, capabilities: list[str], label: str) -> str:
    """What the user can run to allow a denied call, in plain words."""
    flags = " ".join(f"--capability {c}" for c in capabilities)
    agent = f" --agent {label}" if label else ""
    return (
        f"To allow it for this agent, the user can run: meith grants add --caller agent{agent} "
        f"{flags} --tool {tool}"
        + (
            f" (and, if the plugin is not approved: meith plugins approve {plugin})"
            if plugin
            else ""
        )
    )
