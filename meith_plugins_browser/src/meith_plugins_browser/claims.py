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

import asyncio
import contextlib
from typing import Final

import anyio
import structlog

from meith_plugins_browser.browser import BrowserHost
from meith_plugins_browser.tabs import Tab

_log = structlog.get_logger("meith.browser")

RESET_TIMEOUT_MS: Final = 5_000
#: How long ending a claim may take before the tab is closed instead.
CLEANUP_BUDGET_S: Final = 10.0


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
    # A task of its own: the caller's deadline or its connection closing cancels the caller,
    # and must not leave the claim released over a half-cleaned tab.
    await asyncio.shield(host.spawn(_end_claim(host, tab, owner)))


async def _end_claim(host: BrowserHost, tab: Tab, owner: str) -> None:
    async with tab.lock:
        if tab.owner_id != owner:
            return
        try:
            clean = False
            with anyio.move_on_after(CLEANUP_BUDGET_S):
                clean = await _wipe(host, tab)
            if not clean:  # a tab that cannot be reset is closed
                _log.warning("could not reset a released tab; closing it", tabId=tab.id)
                with anyio.move_on_after(CLEANUP_BUDGET_S):
                    await host.close_tab(tab)
        finally:
            tab.owner_id = None
            tab.console.clear()
            tab.network.clear()


async def _close_opened(host: BrowserHost, tab: Tab) -> None:
    async with tab.lock:
        for principal in list(tab.cdp):
            await detach(tab, principal)
        with anyio.move_on_after(CLEANUP_BUDGET_S):
            await host.close_tab(tab)
        tab.owner_id = None


async def _hand_over(tab: Tab, session_id: str) -> None:
    """A detached tab outlives its session: its CDP sessions go, the page stays."""
    async with tab.lock:
        for principal in list(tab.cdp):
            await detach(tab, principal)
        old = tab.forget_reader(session_id)
        tab.owner_id = None
        tab.opened_by = None
    if old is not None:
        with contextlib.suppress(Exception):
            await old.handle.dispose()


async def _wipe(host: BrowserHost, tab: Tab) -> bool:
    """Detach every CDP session on the tab and reset its page; False if the page could not be
    reset (and is still there)."""
    for principal in list(tab.cdp):
        await detach(tab, principal)
    if host.tabs.find(tab.id) is None or host.closing:
        return True
    try:
        await tab.page.goto("about:blank", timeout=RESET_TIMEOUT_MS)
        session = await host.new_cdp_session(tab)
        try:
            await session.send("Page.resetNavigationHistory")
        finally:
            await session.detach()
    except Exception as exc:
        _log.debug("tab reset failed", tabId=tab.id, error=str(exc))
        return host.tabs.find(tab.id) is None
    tab.url, tab.title, tab.load_state, tab.error = "about:blank", "", "ready", None
    tab.invalidate_elements("the tab was released and reset since the ids were issued")
    return True


async def end_session(host: BrowserHost, session_id: str) -> None:
    """A session ended: the tabs it opened close (those it detached are left open, unclaimed,
    as they are), its other claims end, and what it set on tabs it used unclaimed goes."""
    for tab in list(host.tabs):
        if tab.opened_by == session_id and tab.owner_id == session_id:
            if tab.detached:
                await _hand_over(tab, session_id)
            else:
                await _close_opened(host, tab)
            continue
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
