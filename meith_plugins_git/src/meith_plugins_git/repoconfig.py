"""Settings in a repository's own config that would make git start a program.

A repository is hostile input: its `.git/config` (and whatever that includes) can name
programs for git to run — filter and diff drivers, fsmonitor, gpg, editors, ssh. `BASE_CONFIG`
in the runner switches the fixed ones off for every command; the ones keyed by a driver name
(`filter.<name>.clean`, `diff.<name>.textconv`, ...) can only be found by reading the config.

The rule: a program-valued setting that comes from the repository (scope local, worktree, or
a file included from those) is replaced by the user's own value (system or global scope) for
the same key, or disabled. Settings from the user's own config are left alone: they are the
user's choice (git-lfs, a signing program).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from meith_core import GIT_PROGRAM_KEYS

#: Scopes written by the user rather than by whoever produced the repository.
USER_SCOPES: Final = frozenset({"system", "global"})

#: Program-valued keys (lower-case, `*` = a driver or subsection name) and their neutral value:
#: the core's one table, shared with the scanner of planted git metadata
#: (`meith_core.GitMetadataWatch`).
PROGRAM_KEYS: Final = GIT_PROGRAM_KEYS

_PATTERNS: Final = tuple(
    (re.compile(fnmatch.translate(pattern)), neutral) for pattern, neutral in PROGRAM_KEYS
)
_PROTOCOL_ALLOW: Final = re.compile(r"^protocol\..+\.allow$")


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    scope: str
    key: str
    value: str | None
    #: Where git read it (`--show-origin`): `file:<path>`, `command line:`, ...; "" unknown.
    origin: str = ""


def parse_config_list(
    data: bytes, *, with_scope: bool, with_origin: bool = False
) -> list[ConfigEntry]:
    """Parse `git config --list --null [--show-scope] [--show-origin]` output (git writes the
    scope, then the origin, then `key\nvalue`, each field ended by a NUL)."""
    fields = data.split(b"\0")
    if fields and fields[-1] == b"":
        fields.pop()
    entries: list[ConfigEntry] = []
    step = 1 + with_scope + with_origin
    for i in range(0, len(fields) - step + 1, step):
        scope = fields[i].decode("utf-8", "replace") if with_scope else "unknown"
        origin = fields[i + step - 2].decode("utf-8", "surrogateescape") if with_origin else ""
        raw = fields[i + step - 1]
        key, sep, value = raw.partition(b"\n")
        entries.append(
            ConfigEntry(
                scope,
                key.decode("utf-8", "surrogateescape"),
                value.decode("utf-8", "surrogateescape") if sep else None,
                origin,
            )
        )
    return entries


def _neutral_value(key: str) -> str | None:
    lower = _lower_key(key)
    for pattern, neutral in _PATTERNS:
        if pattern.match(lower):
            return neutral
    return None


def _lower_key(key: str) -> str:
    # Section and variable names are case-insensitive, a subsection is not; patterns match
    # on the lowered whole, which only widens what is caught.
    return key.lower()


def neutralising_overrides(
    entries: Iterable[ConfigEntry],
    forced: Iterable[str] = (),
    neutral: Mapping[str, str] | None = None,
) -> list[tuple[str, str]]:
    """The `-c key=value` settings that take the repository's programs away.

    `forced` are keys every command already sets to a fixed value; they are left out so the
    user's value cannot undo them. `neutral` (lower-case keys) replaces the table's neutral
    value where it depends on the repository.
    """
    computed = {k.lower(): v for k, v in (neutral or {}).items()}
    skip = {k.lower() for k in forced}
    user_values: dict[str, str] = {}
    repo_keys: list[str] = []
    protocol_keys: list[str] = []
    for entry in entries:
        if _PROTOCOL_ALLOW.match(_lower_key(entry.key)):
            protocol_keys.append(entry.key)
            continue
        if _neutral_value(entry.key) is None or _lower_key(entry.key) in skip:
            continue
        if entry.scope in USER_SCOPES:
            if entry.value is not None:
                user_values[entry.key] = entry.value
        elif entry.scope != "command":
            repo_keys.append(entry.key)
    overrides: list[tuple[str, str]] = []
    seen: set[str] = set()
    for key in repo_keys:
        if key in seen:
            continue
        seen.add(key)
        fallback = computed.get(_lower_key(key)) or _neutral_value(key)
        assert fallback is not None
        overrides.append((key, user_values.get(key, fallback)))
    # `protocol.<name>.allow` beats `protocol.allow=never`: no scope may re-enable transport.
    for key in dict.fromkeys(protocol_keys):
        overrides.append((key, "never"))
    return overrides
