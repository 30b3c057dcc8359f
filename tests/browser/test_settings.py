"""The `browser` settings section."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from meith_plugins_browser.settings import BrowserSettings, browser_settings


def test_settings_defaults_and_validation() -> None:
    defaults = BrowserSettings()
    assert defaults.headless is True
    assert (defaults.viewport.width, defaults.viewport.height) == (1280, 720)
    assert defaults.extraSchemes == []
    assert browser_settings({}) == defaults
    assert browser_settings({"browser": {"headless": False}}).headless is False
    assert browser_settings({"browser": {"headless": "sometimes"}}) == defaults  # invalid: defaults
    with pytest.raises(ValidationError):
        BrowserSettings.model_validate({"extraSchemes": ["bad scheme"]})
