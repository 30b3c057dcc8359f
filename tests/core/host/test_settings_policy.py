"""Policy keys of the settings are the local user's: a granted agent's `set_app_settings` cannot
change them."""

from __future__ import annotations

import json

import pytest

from meith_core import ErrorCode, Runtime
from meith_core.audit.segments import Limits


@pytest.mark.anyio
async def test_a_granted_agent_cannot_shorten_the_retention_to_flush_the_trail(
    runtime: Runtime,
) -> None:
    agent = runtime.open_session("agent")
    runtime.grant(agent, ["writes-files"])
    for patch in ({"retentionDays": 1}, {"maxBytes": 1024 * 1024}):
        result = await runtime.call(
            "set_app_settings", {"settings": {"audit": patch}}, caller=agent
        )
        assert result.error.code is ErrorCode.PERMISSION_DENIED, result
        assert "meith settings set" in result.error.message
    assert "audit" not in runtime.settings.load()
    # The local user changes it (what `meith settings set audit.retentionDays 7` does).
    runtime.settings.merge({"audit": {"retentionDays": 7}})
    assert Limits.from_settings(runtime.settings.snapshot()["audit"]).retention_s == 7 * 86_400


@pytest.mark.anyio
async def test_the_secret_list_is_policy_an_agent_cannot_change(runtime: Runtime) -> None:
    session = runtime.open_session("agent")
    runtime.grant(session, ["writes-files"])
    result = await runtime.call(
        "set_app_settings", {"settings": {"confinement": {"secretPaths": []}}}, caller=session
    )
    assert not result.ok
    assert "meith settings set confinement.secretPaths" in json.dumps(result.to_wire())
