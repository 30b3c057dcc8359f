"""The CLI's one did-you-mean: close names are suggested, a shared prefix is not closeness."""

from __future__ import annotations

from meith_core.cli.spelling import closest, did_you_mean, not_one_of


def test_the_closest_names_and_only_close_ones() -> None:
    assert closest("agnet", ["cli", "agent"]) == ["agent"]
    assert closest("git_zzz", ["git_log", "git_status"]) == []
    assert closest("anything", []) == []


def test_did_you_mean_writes_each_name_as_asked() -> None:
    assert did_you_mean("limt", ["limit", "path"], prefix="--") == " Did you mean --limit?"
    assert did_you_mean("qqq", ["limit"]) == ""


def test_a_refused_value_lists_the_valid_ones_and_the_closest() -> None:
    assert not_one_of("agnet", ("cli", "agent")) == (
        "'agnet' is not one of: cli, agent. Did you mean agent?"
    )
    assert not_one_of("robot", ("cli", "agent")) == "'robot' is not one of: cli, agent."
