"""`meith call TOOL [--key value ...]`: turning command-line tokens into tool arguments.

The rules of the original CLI (inventory §5):
- `--key value`, `--key=value`; a bare `--key` (next token missing or an option) is true.
- Repeated keys accumulate into an array in order.
- Values are coerced: true/false to booleans, numeric strings to numbers, else strings.
- `--key-json VALUE` parses VALUE as JSON; `--arg-json OBJ` merges a JSON object.
- `--args` takes every following token literally (dashes included) as an array.
- `--` ends options; what follows becomes `args` when `--args` was not given.
- `--stdin` reads a JSON object as the base; explicit flags override it.
- Reserved (global) options are never forwarded as tool arguments.
Keys written kebab-case are sent camelCase (`--include-patches` -> `includePatches`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

#: Global options: consumed by the CLI, never forwarded. Value-taking ones map to True.
RESERVED: dict[str, bool] = {
    "socket": True,
    "instance": True,
    "timeout": True,
    "cwd": True,
    "arg-json": True,
    "json": False,
    "quiet": False,
    "verbose": False,
    "stdin": False,
    "help": False,
}
_SHORT = {"-v": "verbose", "-q": "quiet", "-h": "help"}
_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


class UsageError(ValueError):
    """A command line the CLI cannot turn into a call (exit code 2)."""


@dataclass
class CallLine:
    tool: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    positionals: list[str] = field(default_factory=list)


def coerce(value: str) -> Any:
    if value == "true":
        return True
    if value == "false":
        return False
    if _NUMBER.fullmatch(value):
        number = float(value)
        if number.is_integer() and not any(c in value for c in ".eE"):
            return int(value)
        return number
    return value


def camel(key: str) -> str:
    head, *rest = key.split("-")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _parse_json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UsageError(f"Invalid JSON for {what}: {exc}") from None


def _value(tokens: list[str], i: int, eq: str, inline: str) -> tuple[str | None, int]:
    """The value of the option just read: inline (`--k=v`), the next token unless it is an
    option, or None (a bare flag). Returns it with the index of the next unread token."""
    if eq:
        return inline, i
    if i < len(tokens) and not (tokens[i].startswith("-") and not _NUMBER.fullmatch(tokens[i])):
        return tokens[i], i + 1
    return None, i


def parse_call_line(tokens: list[str]) -> CallLine:
    line = CallLine()
    flags: dict[str, list[Any]] = {}
    json_flags: dict[str, Any] = {}
    arg_json: dict[str, Any] = {}
    passthrough: list[str] | None = None
    explicit_args: list[str] | None = None

    def put(key: str, value: Any) -> None:
        flags.setdefault(key, []).append(value)  # repeated keys accumulate, in order

    i = 0
    while i < len(tokens):
        word = tokens[i]
        i += 1
        if word == "--":
            passthrough = tokens[i:]
            break
        if word in _SHORT:
            line.options[_SHORT[word]] = True
            continue
        if not word.startswith("--") or word == "--":
            if word.startswith("-") and len(word) > 1 and not _NUMBER.fullmatch(word):
                put(word.lstrip("-"), True)  # unknown short flag: true, like the original
                continue
            if line.tool is None:
                line.tool = word
            else:
                line.positionals.append(word)
            continue
        name, eq, inline = word[2:].partition("=")
        if not name:
            raise UsageError(f"Invalid option {word!r}")
        if name == "args":
            explicit_args = ([inline] if eq else []) + tokens[i:]
            break

        if name in RESERVED:
            if RESERVED[name]:
                value, i = _value(tokens, i, eq, inline)
                if value is None:
                    raise UsageError(f"--{name} needs a value")
                if name == "arg-json":
                    parsed = _parse_json(value, "--arg-json")
                    if not isinstance(parsed, dict):
                        raise UsageError("--arg-json must be a JSON object")
                    arg_json.update(parsed)
                else:
                    line.options[name] = value
            else:
                line.options[name] = True if not eq else coerce(inline)
            continue
        if name.endswith("-json") and len(name) > 5:
            value, i = _value(tokens, i, eq, inline)
            if value is None:
                raise UsageError(f"--{name} needs a JSON value")
            json_flags[camel(name[:-5])] = _parse_json(value, f"--{name}")
            continue
        value, i = _value(tokens, i, eq, inline)
        put(camel(name), True if value is None else coerce(value))

    line.arguments = {
        **arg_json,
        **json_flags,
        **{k: v[0] if len(v) == 1 else v for k, v in flags.items()},
    }
    if explicit_args is not None:
        line.arguments["args"] = explicit_args
    elif passthrough:
        line.arguments.setdefault("args", passthrough)
    return line


def parse_timeout(value: Any) -> int:
    try:
        ms = int(str(value))
    except ValueError:
        ms = 0
    if ms <= 0:
        raise UsageError("--timeout must be a positive integer (milliseconds).")
    return ms
