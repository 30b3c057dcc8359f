"""The one helper for caller-supplied regular expressions: linear time (RE2), and it says what
it refuses."""

from __future__ import annotations

import pytest

from meith_core import CallerPattern, PatternError, compile_pattern


def test_the_helper_is_linear_time_and_says_what_it_refuses() -> None:
    pattern = compile_pattern("^(a+)+$")
    assert isinstance(pattern, CallerPattern)
    # Far past anything backtracking could finish (2**10000 steps): linear time does.
    assert pattern.search("a" * 10_000 + "!") is False
    assert compile_pattern(r"(\w+)\s*=\s*(\d+)").find("x = 42;") == "x = 42"
    assert compile_pattern("error", ignore_case=True).search("An ERROR here")
    for bad, says in [
        ("(?=a)a", "lookahead is not supported"),
        ("(?<!b)a", "lookbehind is not supported"),
        (r"(a)\1", "backreferences are not supported"),
        ("(a", "invalid regular expression"),
        ("a" * 1001, "longer than 1000"),
    ]:
        with pytest.raises(PatternError, match=says.split(" (")[0]):
            compile_pattern(bad)
