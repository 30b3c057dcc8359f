"""The one 'did you mean' helper: close names only, best first."""

from __future__ import annotations

from meith_core.base.suggest import close_names, did_you_mean


def test_a_misspelt_name_finds_the_close_ones_best_first() -> None:
    names = ["git_status", "git_stage", "git_diff", "run_command"]
    assert close_names("git_statsu", names) == ["git_status"]
    assert close_names("comand", ["command", "shell", "cwd"]) == ["command"]
    assert did_you_mean("git_statsu", names) == " Did you mean git_status?"
    assert did_you_mean("cmd2", ["command"], quote='"') == ""


def test_a_shared_prefix_is_not_a_resemblance() -> None:
    assert close_names("git_frobnicate", ["git_status", "git_stage", "git_log"]) == []
    assert close_names("x", []) == []
