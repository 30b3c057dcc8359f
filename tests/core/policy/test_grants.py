"""Grants and the standing grants file: who a grant may be for, what it keeps, and uses that
concurrent processes never overspend."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from meith_core.policy.grants import Grant, StandingGrants, new_grant


def test_grants_are_only_for_cli_and_agent_callers() -> None:
    for kind in ("renderer", "internal", "plugin"):
        with pytest.raises(ValueError, match="grants are for cli and agent"):
            new_grant(kind, ["writes-files"])
    with pytest.raises(ValueError, match="at least one capability"):
        new_grant("cli", [])
    with pytest.raises(ValueError, match="uses"):
        new_grant("cli", ["writes-files"], uses=0)
    with pytest.raises(ValueError, match="unknown capability"):
        new_grant("cli", ["everything"])


@pytest.mark.slow
def test_concurrent_processes_never_spend_more_uses_than_a_grant_has(tmp_path: Path) -> None:
    """Eight processes race for three uses through the file lock: exactly three win, and the
    spent grant is gone from the file."""
    import subprocess
    import sys

    path = tmp_path / "grants.json"
    grant = StandingGrants(path).add(new_grant("cli", ["writes-files"], uses=3))
    code = (
        "import sys; from pathlib import Path;"
        "from meith_core.policy.grants import StandingGrants;"
        "print(StandingGrants(Path(sys.argv[1])).consume_use(sys.argv[2]))"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(path), grant.id], stdout=subprocess.PIPE, text=True
        )
        for _ in range(8)
    ]
    answers = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert sorted(answers) == ["False"] * 5 + ["True"] * 3
    assert StandingGrants(path).current() == []


def test_a_grant_keeps_its_destinations(tmp_path: Path) -> None:
    grant = new_grant("agent", ["starts-process"], cwd_prefix=str(tmp_path), net=["a.org,any"])
    assert grant.net == ("any",)
    grant = new_grant("agent", ["starts-process"], cwd_prefix=str(tmp_path), net=["A.org:443"])
    assert Grant.from_json(json.loads(json.dumps(grant.to_json()))).net == ("a.org:443",)


def test_agent_name_grants_round_trip_and_refuse_other_callers(tmp_path: Path) -> None:
    store = StandingGrants(tmp_path / "grants.json")
    grant = store.add(new_grant("agent", ["writes-files"], agent="alice"))
    (loaded,) = StandingGrants(tmp_path / "grants.json").current()
    assert loaded.agent == "alice"
    assert loaded.id == grant.id
    with pytest.raises(ValueError, match="--caller agent"):
        new_grant("cli", ["writes-files"], agent="alice")
    assert isinstance(loaded, Grant)
