"""The blocking client without a runtime: it says where it looked and what to do."""

from __future__ import annotations

import pytest

from meith_core.client import Client, ConnectError


def test_client_without_a_runtime_says_where_it_looked_and_what_to_do(tmp_path) -> None:
    path = str(tmp_path / "none.sock")
    with pytest.raises(ConnectError) as err:
        Client(path)
    assert str(err.value) == f"No meith runtime is listening at {path}. Start one with: meith serve"
