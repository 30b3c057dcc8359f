"""The argument rules of `meith call` (see the module docstring of meith_core.cli.args)."""

from __future__ import annotations

import pytest

from meith_core.cli.args import UsageError, check_names, coerce, parse_call_line, parse_timeout


def test_flag_value_forms_and_bare_flags() -> None:
    line = parse_call_line(["t", "--a", "1", "--b=two", "--c", "--d", "x"])
    assert line.tool == "t"
    assert line.arguments == {"a": 1, "b": "two", "c": True, "d": "x"}


def test_repeated_flags_accumulate_in_order() -> None:
    assert parse_call_line(["t", "--tag", "one", "--tag=two", "--tag", "3"]).arguments == {
        "tag": ["one", "two", 3]
    }


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("true", True),
        ("false", False),
        ("42", 42),
        ("-7", -7),
        ("3.5", 3.5),
        ("-0.25", -0.25),
        ("1e3", 1000.0),
        ("abc", "abc"),
        ("0x10", "0x10"),
    ],
)
def test_values_are_coerced(raw, value) -> None:
    assert coerce(raw) == value
    assert type(coerce(raw)) is type(value)


def test_a_negative_number_is_a_value_not_an_option() -> None:
    assert parse_call_line(["t", "--delta", "-5"]).arguments == {"delta": -5}


def test_json_flags_and_arg_json_merge_with_flags_winning() -> None:
    line = parse_call_line(
        ["t", "--arg-json", '{"a": 1, "b": 2}', "--params-json", '{"x": [1]}', "--b", "3"]
    )
    assert line.arguments == {"a": 1, "b": 3, "params": {"x": [1]}}


def test_arg_json_must_be_an_object_and_bad_json_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="must be a JSON object"):
        parse_call_line(["t", "--arg-json", "[1]"])
    with pytest.raises(UsageError, match="Invalid JSON"):
        parse_call_line(["t", "--x-json", "{nope"])


def test_args_captures_everything_after_it_dashes_included() -> None:
    assert parse_call_line(["t", "--command", "node", "--args", "-e", "0", "--json"]).arguments == {
        "command": "node",
        "args": ["-e", "0", "--json"],
    }


def test_double_dash_passthrough_becomes_args() -> None:
    line = parse_call_line(["t", "--command", "npm", "--json", "--", "run", "--port", "3000"])
    assert line.arguments == {"command": "npm", "args": ["run", "--port", "3000"]}
    assert line.options == {"json": True}


def test_reserved_options_are_never_forwarded() -> None:
    line = parse_call_line(
        [
            "t",
            "--json",
            "--quiet",
            "-v",
            "--timeout",
            "500",
            "--cwd",
            "/tmp",
            "--socket",
            "/s",
            "--instance",
            "lbl",
            "--stdin",
            "--help",
            "--k",
            "v",
        ]
    )
    assert line.arguments == {"k": "v"}
    assert line.options == {
        "json": True,
        "quiet": True,
        "verbose": True,
        "timeout": "500",
        "cwd": "/tmp",
        "socket": "/s",
        "instance": "lbl",
        "stdin": True,
        "help": True,
    }


def test_kebab_case_keys_become_camel_case() -> None:
    assert parse_call_line(
        ["t", "--include-patches", "false", "--start-point", "main"]
    ).arguments == {"includePatches": False, "startPoint": "main"}


def test_positionals_after_the_tool_are_kept_for_a_clear_error() -> None:
    assert parse_call_line(["t", "stray"]).positionals == ["stray"]


@pytest.mark.parametrize("bad", ["0", "-5", "abc", "1.5"])
def test_timeout_must_be_a_positive_integer(bad) -> None:
    with pytest.raises(UsageError, match="positive integer"):
        parse_timeout(bad)
    assert parse_timeout("250") == 250


_LOG_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "limit": {"type": "integer"},
        "path": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "all": {"type": "boolean"},
    },
}


@pytest.mark.parametrize("tokens", [["t", "--limit"], ["t", "--limit", "--json"]])
def test_a_flag_without_its_value_is_an_error_naming_the_type(tokens) -> None:
    with pytest.raises(UsageError, match=r"^--limit needs a value \(integer\)$"):
        parse_call_line(tokens).resolve(_LOG_SCHEMA)


def test_a_bare_flag_is_true_only_for_a_boolean_parameter() -> None:
    assert parse_call_line(["t", "--all"]).resolve(_LOG_SCHEMA) == {"all": True}
    with pytest.raises(UsageError, match=r"^--path needs a value \(string\)$"):
        parse_call_line(["t", "--path"]).resolve(_LOG_SCHEMA)


def test_an_unknown_parameter_names_the_closest_ones() -> None:
    arguments = parse_call_line(["t", "--limt", "2"]).resolve(_LOG_SCHEMA)
    with pytest.raises(UsageError) as refused:
        check_names("git_log", arguments, _LOG_SCHEMA)
    assert str(refused.value) == (
        'git_log has no parameter --limt. Did you mean --limit? See its parameters with "meith '
        'call git_log --help".'
    )
    with pytest.raises(UsageError, match=r"no parameter --zzz\. See its parameters"):
        check_names("git_log", {"zzz": 1}, _LOG_SCHEMA)
    # A schema that admits other names is left to the tool.
    check_names("t", {"zzz": 1}, {**_LOG_SCHEMA, "additionalProperties": True})
