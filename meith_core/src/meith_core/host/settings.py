"""`$MEITH_HOME/settings.json`: user settings the tools read.

Plugins may declare the model of their own section (the `meith_settings` hook); those
sections are validated on every write. Other sections are kept as given, as long as they are
plain JSON — and only the local user writes them: a section no loaded plugin registered may
belong to a plugin installed (or re-enabled) later, which would read it as policy.

A section may mark some of its keys as *policy*: settings that loosen a plugin's own checks
(URL schemes, unrestricted CDP). Those are part of the trust root: only the local user changes
them (`meith settings set`, or the embedding program); a merge on behalf of a socket caller
that would change one is refused.
"""

from __future__ import annotations

import copy
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from meith_core.audit.log import AuditLog
from meith_core.audit.segments import AuditSettings, Limits
from meith_core.base.home import file_signature, read_json, write_json_atomic
from meith_core.confine.secret_paths import DEFAULT_SECRET_PATHS, DEFAULT_SECRET_PATTERNS
from meith_core.confine.secret_paths import KEY as SECRET_KEY
from meith_core.confine.secret_paths import PATTERNS_KEY as SECRET_PATTERNS_KEY
from meith_core.confine.secret_paths import SECTION as SECRET_SECTION
from meith_core.protocol.framing import dumps_bytes

MAX_SETTINGS_BYTES = 1024 * 1024


def audit_trail(path: Path, settings: SettingsStore) -> AuditLog:
    """A writer of the trail at `path`, its retention as the `audit` settings say when it
    applies them (every writer of a home's trail must keep what the others keep)."""
    return AuditLog(path, limits=lambda: Limits.from_settings(settings.snapshot().get("audit")))


class ConfinementSettings(BaseModel):
    """The `confinement` settings section (`confine.secret_paths` reads it)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    #: Paths a confined process cannot read and read tools refuse to agents (`~` expands).
    secretPaths: list[str] = Field(default_factory=lambda: list(DEFAULT_SECRET_PATHS))
    #: Names of secret files inside allowed directories (`.env`, `*.pem`; `!name` keeps one).
    secretPatterns: list[str] = Field(default_factory=lambda: list(DEFAULT_SECRET_PATTERNS))

    @field_validator("secretPaths")
    @classmethod
    def _absolute(cls, paths: list[str]) -> list[str]:
        # A relative entry would be silently ignored (relative to what?): an error instead.
        bad = [p for p in paths if not (p.startswith(("/", "~")) and "\0" not in p)]
        if bad:
            raise ValueError(
                f"secret paths must be absolute or start with ~ (the home directory): {bad}"
            )
        return paths

    @field_validator("secretPatterns")
    @classmethod
    def _names(cls, patterns: list[str]) -> list[str]:
        bad = [p for p in patterns if not p.lstrip("!") or "/" in p or "\0" in p]
        if bad:
            raise ValueError(f"secret patterns are file-name patterns (no '/', not empty): {bad}")
        return patterns


class SettingsError(ValueError):
    """A settings change that was refused; nothing was written."""


class PolicySettingError(SettingsError):
    """A change to a policy key by someone other than the local user; nothing was written."""


@dataclass(frozen=True, slots=True)
class SettingsSection:
    """What a plugin's `meith_settings` hook may return for a section instead of a bare model:
    the model and the keys of it that are security policy."""

    model: type[BaseModel]
    policy: frozenset[str] = frozenset()

    def __init__(self, model: type[BaseModel], policy: Iterable[str] = ()) -> None:
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "policy", frozenset(policy))


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return types.MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


class SettingsStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.sections: dict[str, type[BaseModel]] = {}
        #: section -> its policy keys (see the module docstring)
        self.policy: dict[str, frozenset[str]] = {}
        self._sig: tuple[int, int, int] | None = None
        self._data: dict[str, Any] = {}
        self._frozen: Mapping[str, Any] = types.MappingProxyType({})
        # The core's own section (plugins add theirs): shortening the audit trail's retention
        # would flush evidence, so its keys are policy.
        self.register_section("audit", AuditSettings, policy=("retentionDays", "maxBytes"))
        # What confined processes cannot read (and read tools refuse to agents): policy.
        self.register_section(
            SECRET_SECTION, ConfinementSettings, policy=(SECRET_KEY, SECRET_PATTERNS_KEY)
        )

    def register_section(
        self, name: str, model: type[BaseModel] | SettingsSection, policy: Iterable[str] = ()
    ) -> None:
        if isinstance(model, SettingsSection):
            policy = model.policy | frozenset(policy)
            model = model.model
        unknown = set(policy) - set(model.model_fields)
        if unknown:
            raise ValueError(f"policy keys {sorted(unknown)} are not fields of section {name!r}")
        self.sections[name] = model
        self.policy[name] = frozenset(policy)

    def load(self) -> dict[str, Any]:
        """A private copy of the current settings."""
        self._refresh()
        return copy.deepcopy(self._data)

    def snapshot(self) -> Mapping[str, Any]:
        """A read-only view (shared, cheap): what `ToolContext.settings` returns."""
        self._refresh()
        return self._frozen

    def _refresh(self) -> None:
        sig = file_signature(self.path)
        if sig != self._sig:
            self._sig = sig
            data = read_json(self.path)
            self._data = data if isinstance(data, dict) else {}
            self._frozen = _freeze(self._data)

    def get(self, key: str) -> Any:
        """A dotted key's value: as stored, else the default its section's model documents.

        Raises KeyError when neither the file nor a declared model has it.
        """
        section, _, rest = key.partition(".")
        parts = [section, *rest.split(".")] if rest else [section]
        try:
            return _walk(self.load(), parts)
        except KeyError:
            model = self.sections.get(section)
            if model is None:
                raise
            return _walk({section: model().model_dump(mode="json")}, parts)

    def merge(self, patch: Mapping[str, Any], *, allow_policy: bool = True) -> dict[str, Any]:
        """Shallow-merge `patch` (top-level keys replace); a key set to None is removed.

        `allow_policy=False` (a caller other than the local user): a change to a policy key
        raises PolicySettingError.
        """
        if not isinstance(patch, Mapping):
            raise SettingsError("settings must be a JSON object")
        merged = self.load()
        if not merged and self.path.exists() and not isinstance(read_json(self.path), dict):
            # Readers treat a broken file as empty; a write must not replace what the user
            # wrote by hand with just this patch.
            raise SettingsError(
                f"{self.path} is not valid JSON (or not an object); fix or remove it first"
            )
        before = dict(merged)
        for key, value in patch.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = self._validate_section(key, value)
        if not allow_policy:
            for key in patch:
                if key not in self.sections:
                    # Whoever registers the section later (a plugin installed or re-enabled)
                    # would read what was written here as the user's policy.
                    raise PolicySettingError(
                        f"settings section {key!r} is not registered by any loaded plugin, so "
                        "its keys may be security policy; only the local user writes it, on "
                        f"the command line: meith settings set {key}.KEY VALUE"
                    )
                self._check_policy_unchanged(key, before.get(key), merged.get(key))
        try:
            size = len(dumps_bytes(merged))
        except (TypeError, ValueError) as exc:
            raise SettingsError(f"settings must be plain JSON: {exc}") from None
        if size > MAX_SETTINGS_BYTES:
            raise SettingsError(
                f"settings would be {size} bytes; the limit is {MAX_SETTINGS_BYTES}"
            )
        write_json_atomic(self.path, merged)
        self._sig = None
        return merged

    def _validate_section(self, key: str, value: Any) -> Any:
        model = self.sections.get(key)
        if model is None:
            return value
        try:
            return model.model_validate(value).model_dump(mode="json", exclude_none=True)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in (key, *first["loc"]))
            raise SettingsError(f"invalid setting {where}: {first['msg']}") from None

    def _check_policy_unchanged(self, section: str, old: Any, new: Any) -> None:
        keys = self.policy.get(section)
        if not keys:
            return
        was, now = self._effective(section, old), self._effective(section, new)
        for key in sorted(keys):
            if was.get(key) != now.get(key):
                value = now.get(key)
                raise PolicySettingError(
                    f"{section}.{key} is a security policy setting; only the local user changes "
                    f"it, on the command line: meith settings set {section}.{key} "
                    f"'{dumps_bytes(value).decode()}'"
                )

    def _effective(self, section: str, value: Any) -> dict[str, Any]:
        """The section as its plugin reads it: defaults filled in, an invalid one as defaults."""
        model = self.sections[section]
        try:
            return model.model_validate(value if value is not None else {}).model_dump(mode="json")
        except ValidationError:
            return model().model_dump(mode="json")


def _walk(value: Any, parts: list[str]) -> Any:
    for part in parts:
        if not isinstance(value, dict) or part not in value:
            raise KeyError(part)
        value = value[part]
    return value
