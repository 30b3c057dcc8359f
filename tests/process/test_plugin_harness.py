"""The process plugin through `meith_core.testing`'s `meith` fixture (loaded by entry point):
a terminal needs approval and a grant, stays inside a confined grant's directory, and is ended
by the plugin's shutdown hook when the harness closes."""

from __future__ import annotations

from pathlib import Path

import pytest

from meith_core import ErrorCode
from meith_core.testing import MeithHarness

pytestmark = pytest.mark.meith_plugin("process")


def test_a_terminal_needs_a_grant_and_stays_in_its_directory(
    meith: MeithHarness, tmp_path: Path
) -> None:
    assert meith.call("list_terminals", caller="agent").content == []
    inside = tmp_path / "inside"
    inside.mkdir()
    args = {"cwd": str(inside), "shell": "/bin/sh"}
    denied = meith.call("create_terminal", args, caller="agent")
    assert denied.error is not None
    assert denied.error.code == ErrorCode.PERMISSION_DENIED
    meith.approve()
    agent = meith.grant(["starts-process"], caller="agent", confine_to=inside)
    created = meith.call("create_terminal", args, caller=agent, cwd=inside)
    assert created.ok, created.error
    outside = meith.call("create_terminal", {"cwd": str(tmp_path)}, caller=agent, cwd=inside)
    assert outside.error is not None
    assert outside.error.code == ErrorCode.PERMISSION_DENIED
    listed = meith.call("list_terminals", caller=agent).content
    assert [t["id"] for t in listed] == [created.content["id"]]
