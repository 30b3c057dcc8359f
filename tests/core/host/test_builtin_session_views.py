"""Issue 32, case 8: an agent's `get_audit_log` and session list show its own session only.

Before, `get_audit_log` (no grant needed) showed every session's records to any agent, and a
session's list of sessions showed every session with its grants. Now an agent (and a `plugin`
peer) sees only its own session unless the local user granted it the view of every session:
a read-only grant for `get_audit_log`. (The session list over a real socket:
tests/server/test_socket_connection_agents.py; an agent's `--read DIR` grant widens its
reads, never this view.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from meith_core import Runtime
from meith_core.policy.grants import StandingGrants, standing_grant

pytestmark = pytest.mark.anyio


async def _log(runtime: Runtime, caller: Any) -> dict[str, Any]:
    result = await runtime.call("get_audit_log", {"limit": 1000}, caller=caller)
    assert result.ok, result.error
    content = result.content
    assert isinstance(content, dict)
    return content


async def test_an_agent_reads_its_own_sessions_records_unless_granted(runtime: Runtime) -> None:
    a = runtime.open_session("agent", label="A")
    b = runtime.open_session("agent", label="B")
    user = runtime.open_session("cli")
    for who in (a, b, user):
        assert (await runtime.call("app_list_instances", caller=who)).ok

    seen = await _log(runtime, a)
    assert {e["sessionId"] for e in seen["entries"]} == {a.session_id}
    hint = "meith grants add --caller agent --agent A --capability read-only --tool get_audit_log"
    assert hint in seen["note"]
    everything = await _log(runtime, user)
    assert {a.session_id, b.session_id, user.session_id} <= {
        e["sessionId"] for e in everything["entries"]
    }
    assert "note" not in everything

    StandingGrants(runtime.home.grants_path).add(
        standing_grant("agent", ["read-only"], tool="get_audit_log", agent="A")
    )
    granted = await _log(runtime, a)
    assert b.session_id in {e["sessionId"] for e in granted["entries"]}
    assert {e["sessionId"] for e in (await _log(runtime, b))["entries"]} == {b.session_id}


async def test_a_read_grant_in_a_directory_does_not_open_the_view(runtime: Runtime) -> None:
    """`--read DIR` widens an agent's reads to DIR; it is read-only for every tool, so it
    would cover `get_audit_log` too if the view were asked about the agent's directory."""
    a = runtime.open_session("agent", label="A")
    b = runtime.open_session("agent", label="B")
    for who in (a, b):
        assert (await runtime.call("app_list_instances", caller=who)).ok
    grants = StandingGrants(runtime.home.grants_path)
    grants.add(standing_grant("agent", ["read-only"], cwd="/", agent="A"))
    assert {e["sessionId"] for e in (await _log(runtime, a))["entries"]} == {a.session_id}
    # The grant for the view opens it, though the named agent's read grant ranks first.
    grants.add(standing_grant("agent", ["read-only"], tool="get_audit_log"))
    assert b.session_id in {e["sessionId"] for e in (await _log(runtime, a))["entries"]}


def test_a_read_only_grant_names_a_directory_or_the_view_it_opens(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="--tool get_audit_log"):
        standing_grant("agent", ["read-only"])
    with pytest.raises(ValueError, match="--read DIR"):
        standing_grant("agent", ["read-only"], tool="read_file")
    with pytest.raises(ValueError, match="stands alone"):
        standing_grant("agent", ["read-only", "writes-files"], tool="get_audit_log")
    with pytest.raises(ValueError, match="stands alone"):
        standing_grant("agent", ["read-only", "writes-files"], cwd=str(tmp_path))
    assert standing_grant("agent", ["read-only"], cwd=str(tmp_path)).cwd_prefix == str(tmp_path)
    with pytest.raises(ValueError, match="need no grant"):
        standing_grant("agent", ["accesses-network"])
