"""The one 'did you mean' helper: close names only, best first (the CLI's flags and option
values, the call pipeline's arguments, the MCP bridge's tools)."""

from __future__ import annotations

from meith_core.base.suggest import close_names, did_you_mean, not_one_of


def test_a_misspelt_name_finds_the_close_ones_best_first() -> None:
    names = ["git_status", "git_stage", "git_diff", "run_command"]
    assert close_names("git_statsu", names) == ["git_status"]
    assert close_names("comand", ["command", "shell", "cwd"]) == ["command"]
    assert did_you_mean("git_statsu", names) == " Did you mean git_status?"
    assert did_you_mean("cmd2", ["command"], quote='"') == ""


def test_a_shared_prefix_is_not_a_resemblance() -> None:
    assert close_names("git_frobnicate", ["git_status", "git_stage", "git_log"]) == []
    assert close_names("x", []) == []


def test_each_name_is_written_as_the_surface_spells_it() -> None:
    assert close_names("agnet", ["cli", "agent"]) == ["agent"]
    assert did_you_mean("limt", ["limit", "path"], prefix="--") == " Did you mean --limit?"
    assert did_you_mean("qqq", ["limit"]) == ""


def test_a_refused_value_lists_the_valid_ones_and_the_closest() -> None:
    assert not_one_of("agnet", ("cli", "agent")) == (
        "'agnet' is not one of: cli, agent. Did you mean agent?"
    )
    assert not_one_of("robot", ("cli", "agent")) == "'robot' is not one of: cli, agent."
