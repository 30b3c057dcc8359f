"""Finding a Chromium (the variable, then Playwright's, then PATH) and the switches it runs with."""

from __future__ import annotations

from pathlib import Path

import pytest

from meith_plugins_browser.executable import (
    ENV_VAR,
    INSTALL_HINT,
    LAUNCH_ARGS,
    BrowserNotFoundError,
    find_browser,
)


def _exe(path: Path) -> str:
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return str(path)


def test_the_variable_then_playwright_then_path(tmp_path: Path) -> None:
    env_exe = _exe(tmp_path / "env-chrome")
    pw_exe = _exe(tmp_path / "pw-chrome")
    on_path = {"chromium": "/usr/bin/chromium"}
    found = find_browser(env={ENV_VAR: env_exe}, playwright_path=pw_exe, which=on_path.get)
    assert (found.path, found.source) == (env_exe, "env")
    found = find_browser(env={}, playwright_path=pw_exe, which=on_path.get)
    assert (found.path, found.source) == (pw_exe, "playwright")
    found = find_browser(env={}, playwright_path=str(tmp_path / "missing"), which=on_path.get)
    assert (found.path, found.source) == ("/usr/bin/chromium", "path")
    chrome_only = {"google-chrome": "/opt/chrome"}
    assert find_browser(env={}, playwright_path=None, which=chrome_only.get).path == "/opt/chrome"


def test_no_browser_says_how_to_install_one(tmp_path: Path) -> None:
    with pytest.raises(BrowserNotFoundError) as err:
        find_browser(env={}, playwright_path=None, which=lambda _name: None)
    assert str(err.value) == INSTALL_HINT
    assert INSTALL_HINT.endswith(".")
    assert "\n" not in INSTALL_HINT
    with pytest.raises(BrowserNotFoundError) as err:
        find_browser(env={ENV_VAR: str(tmp_path)}, playwright_path=None, which=lambda _n: None)
    assert "not an executable file" in str(err.value)


def test_launch_switches_keep_the_browser_off_the_network() -> None:
    for switch in (
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        "--no-first-run",
    ):
        assert switch in LAUNCH_ARGS
