"""Call approval requests to elicitations: only an explicit allow allows, who answered, and what
the person is told."""

from __future__ import annotations

import mcp_types as types
import pytest

from meith_core.mcp import call_approval


@pytest.mark.parametrize(
    ("answer", "decision"),
    [
        (types.ElicitResult(action="accept", content={"decision": "allow_once"}), "allow_once"),
        (
            types.ElicitResult(action="accept", content={"decision": "allow_session"}),
            "allow_session",
        ),
        (types.ElicitResult(action="accept", content={"decision": "deny"}), "deny"),
        (types.ElicitResult(action="accept", content={"decision": "allow_forever"}), "deny"),
        (types.ElicitResult(action="accept", content={}), "deny"),
        (types.ElicitResult(action="decline"), "deny"),
        (types.ElicitResult(action="cancel"), "deny"),
        (None, "deny"),
    ],
)
def test_only_an_explicit_allow_allows(answer: types.ElicitResult | None, decision: str) -> None:
    assert call_approval.decision_of(answer) == decision


def test_who_answered_says_the_user_and_a_decline_is_theirs() -> None:
    accepted = types.ElicitResult(action="accept", content={"decision": "deny"})
    assert call_approval.answered_by(accepted) == "the user at the MCP client"
    declined = call_approval.answered_by(types.ElicitResult(action="decline"))
    assert declined == "the user at the MCP client, who declined"
    assert "dismissed" in call_approval.answered_by(types.ElicitResult(action="cancel"))
    assert call_approval.answered_by(None).startswith("nobody")


def test_the_elicitation_says_who_what_where_and_redacted_args() -> None:
    message = call_approval.elicitation_message(
        {
            "label": "claude-code",
            "toolName": "git_commit",
            "plugin": "git",
            "capabilities": ["writes-files"],
            "cwd": "/src/app",
            "arguments": {"message": "x", "token": "[redacted]"},
        }
    )
    for part in ("claude-code", "git_commit", "writes-files", "/src/app", "[redacted]"):
        assert part in message
    schema = call_approval.elicitation_schema()["properties"]["decision"]
    assert [c["const"] for c in schema["oneOf"]] == ["allow_once", "allow_session", "deny"]


def test_the_elicitation_says_plainly_that_a_process_runs_unconfined() -> None:
    request = {
        "label": "claude-code",
        "toolName": "create_terminal",
        "plugin": "process",
        "capabilities": ["starts-process"],
        "cwd": "/src/app",
        "arguments": {},
    }
    message = call_approval.elicitation_message(request)
    assert "Directory:" not in message  # reads as "confined there"
    assert "NOT confined" in message
    assert "full access" in message
    assert "/src/app" in message
    # The runtime's own sentence wins when it sends one.
    said = call_approval.elicitation_message({**request, "runs": "confined to /src/app"})
    assert "Where: confined to /src/app" in said
