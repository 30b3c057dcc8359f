"""The one table of program-valued git config keys."""

from __future__ import annotations

import pytest

from meith_core import is_program_valued


@pytest.mark.parametrize(
    ("key", "value", "program"),
    [
        ("core.fsmonitor", "x", True),
        ("core.sshCommand", "x", True),
        ("filter.Weird.Clean", "x", True),
        ("includeIf.gitdir:/x/.path", "/tmp/c", True),
        ("alias.st", "!sh -c x", True),
        ("alias.co", "checkout", False),
        ("submodule.m.update", "!x", True),
        ("submodule.m.update", "rebase", False),
        ("uploadpack.packObjectsHook", "x", True),
        ("core.worktree", "/x", False),
        ("user.name", "x", False),
    ],
)
def test_which_keys_are_program_valued(key: str, value: str, program: bool) -> None:
    assert is_program_valued(key, value) is program
