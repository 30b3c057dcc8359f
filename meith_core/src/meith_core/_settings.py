"""`$MEITH_HOME/settings.json`: user settings the tools read.

Plugins may declare the model of their own section (the `meith_settings` hook); those
sections are validated on every write. Other sections are kept as given, as long as they are
plain JSON.
"""

from __future__ import annotations

import copy
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from meith_core._audit.segments import AuditSettings
from meith_core._home import file_signature, read_json, write_json_atomic
from meith_core._protocol.framing import dumps_bytes

MAX_SETTINGS_BYTES = 1024 * 1024


class SettingsError(ValueError):
    """A settings change that was refused; nothing was written."""


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return types.MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


class SettingsStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        # Core sections; plugins add theirs with `register_section`.
        self.sections: dict[str, type[BaseModel]] = {"audit": AuditSettings}
        self._sig: tuple[int, int, int] | None = None
        self._data: dict[str, Any] = {}
        self._frozen: Mapping[str, Any] = types.MappingProxyType({})

    def register_section(self, name: str, model: type[BaseModel]) -> None:
        self.sections[name] = model

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

    def merge(self, patch: Mapping[str, Any]) -> dict[str, Any]:
        """Shallow-merge `patch` (top-level keys replace); a key set to None is removed."""
        if not isinstance(patch, Mapping):
            raise SettingsError("settings must be a JSON object")
        merged = self.load()
        if not merged and self.path.exists() and not isinstance(read_json(self.path), dict):
            # Readers treat a broken file as empty; a write must not replace what the user
            # wrote by hand with just this patch.
            raise SettingsError(
                f"{self.path} is not valid JSON (or not an object); fix or remove it first"
            )
        for key, value in patch.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = self._validate_section(key, value)
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
