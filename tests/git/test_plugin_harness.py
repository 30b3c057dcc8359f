"""The git plugin through `meith_core.testing`'s `meith` fixture, loaded by its installed entry
point as a third-party author's tests would load theirs: in-process calls, both gates, a grant
confined to one repository, and the audit trail of the test."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from meith_core import ErrorCode
from meith_core.testing import MeithHarness

pytestmark = pytest.mark.meith_plugin("git")


def test_only_git_and_core_are_loaded_from_the_entry_point(
    meith: MeithHarness, git_home: Path
) -> None:
    loaded = {pid for pid, r in meith.runtime.plugins.records.items() if r.status == "loaded"}
    assert loaded == {"core", "git"}
    assert meith.record.distribution == "meith-plugins-git"
    assert "git_status" in meith.tools()


def test_status_is_read_only_and_commit_needs_approval_and_a_grant_in_scope(
    meith: MeithHarness, make_repo: Callable[..., Path], git_home: Path
) -> None:
    repo = make_repo("inside", files={"a.txt": "a\n"})
    other = make_repo("outside", files={"b.txt": "b\n"})
    (repo / "a.txt").write_text("changed\n")
    status = meith.call("git_status", {"cwd": str(repo)}, caller="agent")
    assert status.ok, status.error
    assert status.content["isRepo"] is True

    stage = {"cwd": str(repo), "paths": ["a.txt"]}
    assert meith.call("git_stage", stage, caller="agent").error.code == ErrorCode.PERMISSION_DENIED
    meith.approve()
    agent = meith.grant(["writes-files"], caller="agent", confine_to=repo)
    assert meith.call("git_stage", stage, caller=agent, cwd=repo).ok
    outside = meith.call(
        "git_stage", {"cwd": str(other), "paths": ["b.txt"]}, caller=agent, cwd=repo
    )
    assert outside.error is not None
    assert outside.error.code == ErrorCode.PERMISSION_DENIED
    decisions = [
        (r["toolName"], r["decision"]) for r in meith.audit() if r["toolName"] != "app_health"
    ]
    assert decisions == [
        ("git_status", "allow"),
        ("git_stage", "deny"),
        ("git_stage", "allow"),
        ("git_stage", "deny"),  # the grant's directory does not cover the other repository
    ]
