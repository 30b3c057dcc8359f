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

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from meith_core import GIT_RISKY_KEYS, GitKey

#: Scopes written by the user rather than by whoever produced the repository.
USER_SCOPES: Final = frozenset({"system", "global"})


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


def _overridden(key: str) -> GitKey | None:
    """The core's table entry (`meith_core.GIT_RISKY_KEYS`, shared with the scanner of
    planted git metadata) of a key the plugin overrides with `-c`; the table says why the
    others need no override."""
    lower = _lower_key(key)
    return next((k for k in GIT_RISKY_KEYS if k.neutral is not None and k.matches(lower)), None)


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
    repo_keys: dict[str, str] = {}  # key -> the table's neutral value
    transport_keys: dict[str, str] = {}
    for entry in entries:
        risky = _overridden(entry.key)
        if risky is None or risky.neutral is None or _lower_key(entry.key) in skip:
            continue
        if risky.kind == "transport":
            transport_keys[entry.key] = risky.neutral
        elif entry.scope in USER_SCOPES:
            if entry.value is not None:
                user_values[entry.key] = entry.value
        elif entry.scope != "command":
            repo_keys.setdefault(entry.key, risky.neutral)
    overrides: list[tuple[str, str]] = []
    for key, table_value in repo_keys.items():
        fallback = computed.get(_lower_key(key)) or table_value
        overrides.append((key, user_values.get(key, fallback)))
    # `protocol.<name>.allow` beats `protocol.allow=never`: no scope may re-enable transport.
    overrides.extend(transport_keys.items())
    return overrides
