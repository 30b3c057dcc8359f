"""What a claim leaves behind when it ends (`browser_use_end`, its session ending): nothing.

Before anyone else can claim or read the tab:

- every CDP session opened on it during the claim is detached; Chromium then drops what was
  set through it (scripts evaluated on new documents, enabled domains, emulation and network
  overrides, bindings);
- the page is left for `about:blank` and its history reset, so scripts run in the current
  document, what was typed, and the URLs visited (tokens in them) go too;
- its console and network entries and element ids are dropped.

The claim is released only then, so nobody can take over a half-cleaned tab; a tab that cannot
be cleaned is closed. Claiming a tab detaches the CDP sessions other sessions opened on it
while it was unclaimed, so nothing they set reaches the claimant.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Final

import structlog

from meith_plugins_browser.tabs import Tab

if TYPE_CHECKING:
    from meith_plugins_browser.browser import BrowserHost

_log = structlog.get_logger("meith.browser")

RESET_TIMEOUT_MS: Final = 5_000


async def detach(tab: Tab, owner: str) -> None:
    session = tab.cdp.pop(owner, None)
    if session is not None:
        with contextlib.suppress(Exception):  # already gone with its page
            await session.detach()


async def on_claimed(tab: Tab, owner: str) -> None:
    """A new claim: what other sessions set over CDP while the tab was open to all goes."""
    async with tab.lock:
        for other in list(tab.cdp):
            if other != owner:
                await detach(tab, other)


async def end_claim(host: BrowserHost, tab: Tab, owner: str) -> None:
    """Wipe what `owner`'s claim left in the tab, then release it (a no-op once the claim is
    gone: a second release racing the first must not wipe the next claimant's tab)."""
    async with tab.lock:
        if tab.owner_id != owner:
            return
        try:
            for principal in list(tab.cdp):
                await detach(tab, principal)
            if host.tabs.find(tab.id) is not None and not host.closing:
                await _blank(host, tab)
        finally:
            tab.owner_id = None
            tab.console.clear()
            tab.network.clear()


async def _blank(host: BrowserHost, tab: Tab) -> None:
    try:
        await tab.page.goto("about:blank", timeout=RESET_TIMEOUT_MS)
        session = await host.new_cdp_session(tab)
        try:
            await session.send("Page.resetNavigationHistory")
        finally:
            await session.detach()
    except Exception as exc:
        if host.tabs.find(tab.id) is None:
            return
        # The previous claimant's page must not reach the next one: give up the tab instead.
        _log.warning("could not reset a released tab; closing it", tabId=tab.id, error=str(exc))
        await host.close_tab(tab)
        return
    tab.url, tab.title, tab.load_state, tab.error = "about:blank", "", "ready", None
    tab.invalidate_elements("the tab was released and reset since the ids were issued")


async def end_session(host: BrowserHost, session_id: str) -> None:
    """A session ended: its claims end, and what it set on tabs it used unclaimed goes."""
    for tab in host.tabs:
        if tab.owner_id == session_id:
            await end_claim(host, tab, session_id)
            continue
        if session_id not in tab.cdp and session_id not in tab.readers:
            continue  # nothing of it here: do not wait for the tab's lock
        async with tab.lock:
            await detach(tab, session_id)
            old = tab.forget_reader(session_id)
        if old is not None:
            with contextlib.suppress(Exception):
                await old.handle.dispose()
