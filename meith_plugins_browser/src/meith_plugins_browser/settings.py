"""The `browser` section of `$MEITH_HOME/settings.json`.

```json
{"browser": {"headless": true, "extraSchemes": ["file"], "navigationTimeoutMs": 15000}}
```

`headless` and `viewport` apply when the browser next starts; the rest apply to the next call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import structlog
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

SECTION = "browser"
_SCHEME_RE = re.compile(r"[a-z][a-z0-9+.-]*")

_log = structlog.get_logger("meith.browser")


class Viewport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    width: int = Field(1280, ge=200, le=7680)
    height: int = Field(720, ge=200, le=4320)


class BrowserSettings(BaseModel):
    """User settings of the browser plugin."""

    model_config = ConfigDict(extra="forbid")

    headless: bool = Field(
        True, description="Run Chromium without a window (false needs a display)."
    )
    extraSchemes: list[str] = Field(
        default_factory=list,
        description=(
            "URL schemes allowed for navigation besides http, https, data and about:blank, "
            'e.g. ["file"]. Widening this lets callers open local files in the browser.'
        ),
        max_length=16,
    )
    navigationTimeoutMs: int = Field(
        15_000,
        ge=1_000,
        le=120_000,
        description="How long navigation tools wait for the load event.",
    )
    actionTimeoutMs: int = Field(
        5_000,
        ge=500,
        le=60_000,
        description="How long click/type wait for an element to be visible and enabled.",
    )
    viewport: Viewport = Field(default_factory=Viewport)
    sandbox: bool | None = Field(
        None,
        description=(
            "Chromium's renderer sandbox. Unset: on, except as root (and off, with a warning, "
            "where the machine cannot provide it)."
        ),
    )
    cdpUnrestricted: bool = Field(
        False,
        description=(
            "Allow every Chrome DevTools Protocol method in cdp_command, including the ones "
            "refused by default (Browser.*, Target.*, downloads, file inputs, Fetch, Security)."
        ),
    )

    @field_validator("extraSchemes")
    @classmethod
    def _schemes(cls, value: list[str]) -> list[str]:
        out = []
        for scheme in value:
            name = scheme.lower().removesuffix(":")
            if not _SCHEME_RE.fullmatch(name):
                raise ValueError(f"{scheme!r} is not a URL scheme name")
            out.append(name)
        return out


def browser_settings(settings: Mapping[str, Any]) -> BrowserSettings:
    """The section from a settings snapshot; defaults when absent or invalid (logged)."""
    raw = settings.get(SECTION)
    if raw is None:
        return BrowserSettings()
    try:
        return BrowserSettings.model_validate(_thaw(raw))
    except ValidationError as exc:
        _log.warning("invalid browser settings ignored; using defaults", error=str(exc))
        return BrowserSettings()


def _thaw(value: Any) -> Any:
    """`ctx.settings` is frozen (mapping proxies, tuples); pydantic wants plain JSON."""
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_thaw(v) for v in value]
    return value
