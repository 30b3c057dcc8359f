"""Starting Chromium made safe: the sandbox is on unless root or set off."""

from __future__ import annotations

import os

import pytest

from meith_plugins_browser.launch import use_sandbox


def test_the_sandbox_is_on_unless_root_or_set_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert use_sandbox(True) is True
    assert use_sandbox(False) is False
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert use_sandbox(None) is False
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert use_sandbox(None) is True
