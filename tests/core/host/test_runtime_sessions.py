"""`Runtime`'s sessions and the environment their processes call back with."""

from __future__ import annotations

import pytest

from meith_core.base.callback_env import TOKEN_ENV
from meith_core.policy.child_tokens import LOCAL_USER
from meith_core.protocol.caller import CallerInfo, CallerKind, ChildBinding


@pytest.mark.anyio
async def test_child_environment_by_caller(runtime) -> None:
    runtime.socket_path = "/tmp/meith-test.sock"
    agent = runtime.open_session("agent", label="claude")
    env = runtime.child_environment(agent)
    assert set(env) == {"MEITH_SOCKET", TOKEN_ENV}
    assert "MEITH_HOME" not in env  # never the way to the trust root
    # The child calls as its session, and reads within the workspace that session opened for.
    assert runtime.child_tokens.resolve(env[TOKEN_ENV]) == ChildBinding(
        CallerKind.AGENT, agent.session_id, "claude", workspace=agent.workspace
    )
    assert agent.workspace == runtime.cwd
    cli = runtime.open_session("cli")
    user_env = runtime.child_environment(cli)
    assert user_env == {
        "MEITH_HOME": str(runtime.home.root),
        "MEITH_SOCKET": "/tmp/meith-test.sock",
        TOKEN_ENV: user_env[TOKEN_ENV],
    }
    # The local user's children carry the user's token: one per runtime, outliving sessions.
    assert runtime.child_tokens.resolve(user_env[TOKEN_ENV]) == LOCAL_USER
    await runtime.close_session(cli)
    assert runtime.child_tokens.resolve(user_env[TOKEN_ENV]) == LOCAL_USER
    assert runtime.child_environment(CallerInfo.for_plugin("x")) == {}
    await runtime.close_session(agent)
    assert runtime.child_tokens.resolve(env[TOKEN_ENV]) is None
    assert runtime.child_environment(agent) == {}  # an ended session mints nothing
    runtime.socket_path = None
    assert runtime.child_environment(cli) == {}
