"""Playwright's errors as a caller reads them."""

from __future__ import annotations

from meith_plugins_browser.errors import playwright_message


def test_playwright_messages_lose_their_prefixes() -> None:
    assert playwright_message(Exception("Page.goto: net::ERR_FAILED at x\nCall log:\n  ...")) == (
        "net::ERR_FAILED at x"
    )
    assert playwright_message(Exception("")) == "Exception"
