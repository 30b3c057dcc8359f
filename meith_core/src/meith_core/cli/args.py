"""`meith call TOOL [--key value ...]`: turning command-line tokens into tool arguments.

The rules (kept compatible with existing scripts that call tools this way):
- `--key value`, `--key=value`; a bare `--key` (next token missing or an option) is true:
  for a boolean parameter, that is; for any other the tool's schema makes it an error, and a
  flag naming no parameter of a tool that takes no others is one too (with a did-you-mean).
- Repeated keys accumulate into an array in order; one value of a parameter that takes a
  string or an array is the string (`--command "make test"`).
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
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from meith_core.base.suggest import did_you_mean

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
    "as-agent": False,
}
_SHORT = {"-v": "verbose", "-q": "quiet", "-h": "help"}
_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


class UsageError(ValueError):
    """A command line the CLI cannot turn into a call (exit code 2)."""


@dataclass
class CallLine:
    tool: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    positionals: list[str] = field(default_factory=list)
    #: `--key value` flags as typed: raw strings (True for a bare flag), in order.
    flags: dict[str, list[str | bool]] = field(default_factory=dict)
    #: Arguments given as JSON (`--arg-json`, `--key-json`, `--args`, `--`): taken as they are.
    explicit: dict[str, Any] = field(default_factory=dict)

    @property
    def arguments(self) -> dict[str, Any]:
        """The arguments without the tool's schema: values coerced by their look."""
        return self.resolve(None)

    def resolve(self, input_schema: dict[str, Any] | None) -> dict[str, Any]:
        """The arguments, each flag coerced to the type the tool's schema declares for it.

        A single value for an array parameter becomes a one-element array; a string
        parameter keeps `123` or `true` as text. Without a schema (or for a key the schema
        does not know) the value is coerced by its look: true/false, numbers, else text.
        """
        props: dict[str, Any] = (input_schema or {}).get("properties") or {}
        out: dict[str, Any] = {}
        for key, values in self.flags.items():
            prop = props.get(key)
            kinds = _kinds(prop)
            if True in values and kinds and "boolean" not in kinds:
                # `--limit` with its value forgotten is a mistake, not `true` (nor 1).
                raise UsageError(f"--{key} needs a value ({type_of(prop or {})})")
            out[key] = coerce_for(prop, values)
        return {**out, **self.explicit} if self.explicit else out


def check_names(tool: str, flags: Iterable[str], input_schema: dict[str, Any] | None) -> None:
    """Refuse a flag naming no parameter of the tool (when its schema admits no others), with
    the parameters it was probably meant to be."""
    if not input_schema or input_schema.get("additionalProperties") is not False:
        return
    props: dict[str, Any] = input_schema.get("properties") or {}
    for key in flags:
        if key not in props:
            hint = did_you_mean(key, props, prefix="--")
            raise UsageError(
                f"{tool} has no parameter --{key}.{hint} "
                f'See its parameters with "meith call {tool} --help".'
            )


def type_of(schema: dict[str, Any]) -> str:
    """A parameter's type in a word or two (`integer`, `string[]`, `a|b`), for help and errors."""
    if "enum" in schema:
        return "|".join(json.dumps(v) if not isinstance(v, str) else v for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    if "anyOf" in schema:
        kinds = [type_of(s) for s in schema["anyOf"] if s.get("type") != "null"]
        return "|".join(dict.fromkeys(kinds)) or "null"
    kind = schema.get("type")
    if kind == "array":
        return f"{type_of(schema.get('items') or {})}[]"
    return str(kind or "json")


def _kinds(schema: dict[str, Any] | None) -> set[str]:
    """The JSON types a (sub)schema admits; empty when it does not say."""
    if not schema:
        return set()
    if "anyOf" in schema or "oneOf" in schema:
        kinds: set[str] = set()
        for sub in schema.get("anyOf") or schema.get("oneOf") or []:
            kinds |= _kinds(sub)
        return kinds
    if "enum" in schema:
        return {
            type(v).__name__.replace("str", "string").replace("bool", "boolean")
            for v in schema["enum"]
        }
    kind = schema.get("type")
    if isinstance(kind, list):
        return set(kind)
    return {kind} if isinstance(kind, str) else set()


def _array_items(schema: dict[str, Any]) -> dict[str, Any] | None:
    if schema.get("type") == "array":
        items = schema.get("items")
        return items if isinstance(items, dict) else None
    for sub in schema.get("anyOf") or schema.get("oneOf") or []:
        if isinstance(sub, dict) and sub.get("type") == "array":
            return _array_items(sub)
    return None


def coerce_one(schema: dict[str, Any] | None, value: str | bool) -> Any:
    if value is True:  # a bare flag
        return True
    assert isinstance(value, str)
    kinds = _kinds(schema)
    if not kinds:
        return coerce(value)
    if value == "null" and "null" in kinds:
        return None
    if kinds & {"integer", "number"} and _NUMBER.fullmatch(value):
        return coerce(value)
    if "boolean" in kinds and value in ("true", "false"):
        return value == "true"
    if "string" in kinds:
        return value
    if kinds & {"object", "array"} and value[:1] in ("{", "["):
        return _parse_json(value, "a JSON value")
    return coerce(value)


def coerce_for(schema: dict[str, Any] | None, values: list[str | bool]) -> Any:
    """Coerce the value(s) of one flag for the parameter's schema."""
    kinds = _kinds(schema)
    if schema is not None and "array" in kinds:
        items = _array_items(schema)
        if len(values) == 1 and isinstance(values[0], str):
            if values[0][:1] == "[":
                return _parse_json(values[0], "an array")
            if "string" in kinds:
                # A parameter that takes a string or a list (`run_command --command "make
                # test"`): one value is the string form; repeat the flag for a list.
                return values[0]
        return [coerce_one(items, v) for v in values]
    if len(values) == 1:
        return coerce_one(schema, values[0])
    return [coerce_one(schema, v) for v in values]  # repeated flags accumulate


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
    flags = line.flags
    json_flags: dict[str, Any] = {}
    arg_json: dict[str, Any] = {}
    passthrough: list[str] | None = None
    explicit_args: list[str] | None = None

    def put(key: str, value: str | bool) -> None:
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
                put(word.lstrip("-"), True)  # unknown short flag: a boolean, like a bare --key
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
        put(camel(name), True if value is None else value)

    # --arg-json is the base; --key-json and flags override it (flags are applied in resolve).
    for key in flags:
        arg_json.pop(key, None)
    line.explicit = {**arg_json, **json_flags}
    if explicit_args is not None:
        line.explicit["args"] = explicit_args
    elif passthrough and "args" not in flags:
        line.explicit.setdefault("args", passthrough)
    return line


def parse_timeout(value: Any) -> int:
    try:
        ms = int(str(value))
    except ValueError:
        ms = 0
    if ms <= 0:
        raise UsageError("--timeout must be a positive integer (milliseconds).")
    return ms
