"""What the sync and async clients share: the session token goes only to the runtime that
gave it."""

from __future__ import annotations

import pytest

from meith_core.base.callback_env import TOKEN_ENV


def test_a_client_sends_its_token_only_to_the_runtime_that_gave_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from meith_core.client._core import client_info

    monkeypatch.setenv(TOKEN_ENV, "mst_x")
    monkeypatch.setenv("MEITH_SOCKET", "/run/a.sock")
    assert client_info("cli", "/", socket_path="/run/a.sock")["sessionToken"] == "mst_x"
    # Another runtime (`meith --instance B` in a terminal of runtime A) never issued it.
    assert "sessionToken" not in client_info("cli", "/", socket_path="/run/b.sock")
    monkeypatch.delenv("MEITH_SOCKET")  # which runtime gave it is unknown: kept to itself
    assert "sessionToken" not in client_info("cli", "/", socket_path="/run/a.sock")
