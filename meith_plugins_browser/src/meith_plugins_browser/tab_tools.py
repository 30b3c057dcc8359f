"""The tab tools: listing, opening, navigating, focusing and closing tabs, and claiming one
for a session."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

import anyio

from meith_core import ActsOn, ToolContext, ToolDefinition, tool
from meith_plugins_browser.browser import BrowserHost
from meith_plugins_browser.claims import end_claim, on_claimed
from meith_plugins_browser.errors import playwright_message
from meith_plugins_browser.models import NavigateArgs, OpenTabArgs, SpaceArgs, TabArgs, UseEndArgs
from meith_plugins_browser.ownership import (
    Access,
    Controller,
    check_access,
    check_release,
    claim,
    may_read,
)
from meith_plugins_browser.settings import BrowserSettings, browser_settings
from meith_plugins_browser.tab_access import Diagnostics, TabAccess, quietly
from meith_plugins_browser.tabs import Tab
from meith_plugins_browser.urls import check_url

if TYPE_CHECKING:
    from playwright.async_api import Response

OPEN_TIMEOUT_MS: Final = 60_000
#: Tries of a history move while Playwright re-attaches to a page after a failed load.
_DETACHED_RETRIES: Final = 30


class TabTools:
    """The browser host's tabs and the tools that open, move and close them."""

    def __init__(self, host: BrowserHost) -> None:
        self.host = host
        self.access = TabAccess(host)

    def definitions(self) -> list[ToolDefinition]:
        c, ro = "controls-browser", "read-only"
        # A new tab acts on the project directory it is opened for (its `cwd` argument, the
        # caller's directory by default); every other tab tool on the directory of the tab it
        # names, whoever calls (docs/plugin-guide.md, "What a tool acts on").
        on_tab = ActsOn.object(self.access.directory, what="tab")
        return [
            tool(
                self.get_tabs,
                effect="reads",
                capabilities=[ro],
                idempotent=True,
                acts_on="global:runtime",
            ),
            tool(
                self.get_active_tab,
                effect="reads",
                capabilities=[ro],
                idempotent=True,
                acts_on="global:runtime",
            ),
            # The first call starts Playwright and Chromium too: give it room on a busy machine.
            tool(
                self.open_browser_tab,
                effect="creates",
                capabilities=[c],
                timeout_ms=OPEN_TIMEOUT_MS,
                acts_on="path:cwd",
            ),
            tool(self.navigate, effect="updates", capabilities=[c], acts_on=on_tab),
            tool(self.go_back, effect="updates", capabilities=[c], acts_on=on_tab),
            tool(self.go_forward, effect="updates", capabilities=[c], acts_on=on_tab),
            tool(self.refresh, effect="updates", capabilities=[c], acts_on=on_tab),
            tool(self.focus_browser_tab, effect="updates", capabilities=[c], acts_on=on_tab),
            tool(self.close_browser_tab, effect="removes", capabilities=[c], acts_on=on_tab),
            tool(self.browser_use_start, effect="updates", capabilities=[c], acts_on=on_tab),
            tool(self.browser_use_end, effect="removes", capabilities=[c], acts_on=on_tab),
        ]

    async def get_tabs(self, ctx: ToolContext, args: SpaceArgs) -> Any:
        """List the browser tabs (all spaces, or one) and their owners."""
        ctl = Controller.of(ctx.caller)
        tabs = self.host.tabs.in_space(args.spaceId)
        await self.access.refresh_titles(tabs)
        listed = [t.to_dict(private=not may_read(t, ctl)) for t in tabs]
        return self.access.done({"browserTabs": listed, "workspaceTabs": []})

    async def get_active_tab(self, ctx: ToolContext, args: SpaceArgs) -> Any:
        """The active browser tab of a space (default: the space used last), or null."""
        space = args.spaceId or ctx.caller.space_id or self.host.tabs.active_space
        tab = self.host.tabs.active_in(space)
        if tab is None:
            return self.access.done(None)
        await self.access.refresh_titles([tab])
        return self.access.done(tab.to_dict(private=not may_read(tab, Controller.of(ctx.caller))))

    async def open_browser_tab(self, ctx: ToolContext, args: OpenTabArgs) -> Any:
        """Open a new browser tab pointing at a URL and focus it."""
        settings = browser_settings(ctx.settings)
        url = check_url(args.url, settings.extraSchemes)
        page = await self.host.new_page(settings)
        space = args.spaceId or ctx.caller.space_id or self.host.tabs.active_space
        # Resolved as the permission service resolved it: the tab's directory from now on.
        cwd = os.path.realpath(os.path.join(ctx.cwd, args.cwd)) if args.cwd else None  # noqa: ASYNC240
        tab = self.host.tabs.new(page, space_id=space, url=url, title=args.title, cwd=cwd)
        ctl = Controller.of(ctx.caller)
        if ctl.require_claim:  # what an agent or plugin opens is its own from the start
            claim(tab, ctl)
            tab.opened_by, tab.detached = ctl.owner_id, args.detach
        self.host.watch(tab)
        async with tab.lock:
            diags = await self._navigate(
                tab, lambda: page.goto(url, timeout=settings.navigationTimeoutMs), settings, url
            )
        if tab.detached:
            note = {
                "level": "info",
                "message": f"Tab {tab.id} is detached: handed to the local user, it stays open "
                "when this session ends",
            }
            diags = [*(diags or []), note]
        return self.access.done(tab.to_dict(), diags)

    async def navigate(self, ctx: ToolContext, args: NavigateArgs) -> Any:
        """Load a URL in a tab (http, https, data: or about:blank by default)."""
        settings = browser_settings(ctx.settings)
        url = check_url(args.url, settings.extraSchemes)
        async with self.access.use(ctx, args.tabId, Access.CONTROL) as tab:
            diags = await self._navigate(
                tab, lambda: tab.page.goto(url, timeout=settings.navigationTimeoutMs), settings, url
            )
        return self.access.done(tab.to_dict(), diags)

    async def _history(self, ctx: ToolContext, tab_id: str, step: str) -> Any:
        """go_back / go_forward / refresh: one guarded navigation of the tab's page."""
        settings = browser_settings(ctx.settings)
        async with self.access.use(ctx, tab_id, Access.CONTROL) as tab:
            move = getattr(tab.page, step)  # page.go_back, page.go_forward or page.reload
            diags = await self._navigate(
                tab, lambda: move(timeout=settings.navigationTimeoutMs), settings
            )
        return self.access.done(tab.to_dict(), diags)

    async def go_back(self, ctx: ToolContext, args: TabArgs) -> Any:
        """Go back one page in a tab's history."""
        return await self._history(ctx, args.tabId, "go_back")

    async def go_forward(self, ctx: ToolContext, args: TabArgs) -> Any:
        """Go forward one page in a tab's history."""
        return await self._history(ctx, args.tabId, "go_forward")

    async def refresh(self, ctx: ToolContext, args: TabArgs) -> Any:
        """Reload a tab."""
        return await self._history(ctx, args.tabId, "reload")

    async def focus_browser_tab(self, ctx: ToolContext, args: TabArgs) -> Any:
        """Make a tab the active tab of its space."""
        tab = self.access.tab(ctx, args.tabId, Access.READ)
        self.host.tabs.activate(tab)
        await quietly(tab.page.bring_to_front())
        await self.access.refresh_titles([tab])
        return self.access.done(tab.to_dict())

    async def close_browser_tab(self, ctx: ToolContext, args: TabArgs) -> Any:
        """Close a tab; {closed: false} when there is no such tab."""
        tab = self.host.tabs.find(args.tabId)
        if tab is None:
            return self.access.done({"closed": False})
        check_access(tab, Controller.of(ctx.caller), Access.CONTROL)
        await self.host.close_tab(tab)
        return self.access.done({"closed": True})

    async def browser_use_start(self, ctx: ToolContext, args: TabArgs) -> Any:
        """Claim a tab for the calling session (agents and plugins must, before controlling it)."""
        tab = self.host.tabs.get(args.tabId)
        ctl = Controller.of(ctx.caller)
        if claim(tab, ctl):
            await on_claimed(tab, ctl.principal)
        return self.access.done(tab.to_dict())

    async def browser_use_end(self, ctx: ToolContext, args: UseEndArgs) -> Any:
        """Release the calling session's claim on a tab (the tab is reset to about:blank)."""
        tab = self.host.tabs.get(args.tabId)
        check_release(tab, Controller.of(ctx.caller), force=args.force)
        if tab.owner_id is not None:
            await end_claim(self.host, tab, tab.owner_id)
            self.access.raise_if_closed(tab)
        return self.access.done(tab.to_dict())

    async def _navigate(
        self,
        tab: Tab,
        action: Callable[[], Awaitable[Response | None]],
        settings: BrowserSettings,
        target: str | None = None,
    ) -> Diagnostics:
        from playwright.async_api import Error as PlaywrightError
        from playwright.async_api import TimeoutError as PlaywrightTimeoutError

        tab.load_state, tab.error = "loading", None
        tab.invalidate_elements("the tab navigated since the ids were issued")
        diags: Diagnostics = []
        try:
            for attempt in range(_DETACHED_RETRIES):
                try:
                    await action()
                    break
                except PlaywrightError as exc:
                    # Right after a failed load Chromium swaps the page's process and
                    # Playwright is briefly not attached to it; the next try works.
                    if "not attached to an active page" not in str(exc).lower():
                        raise
                    if attempt == _DETACHED_RETRIES - 1:
                        raise
                    await anyio.sleep(0.1)
            tab.load_state = "ready"
        except PlaywrightTimeoutError:
            diags.append(
                {
                    "level": "warn",
                    "message": f"Tab {tab.id} is still loading after "
                    f"{settings.navigationTimeoutMs} ms; the page may be partly loaded",
                }
            )
        except PlaywrightError as exc:
            self.access.raise_if_closed(tab)
            message = playwright_message(exc)
            tab.load_state, tab.error = "error", message
            if target is not None:
                tab.url = target
            where = target or tab.url
            diags.append(
                {"level": "error", "message": f"Tab {tab.id} failed to load {where}: {message}"}
            )
        if tab.load_state != "error" and not tab.page.url.startswith("chrome-error://"):
            tab.url = tab.page.url
        await self.access.refresh_titles([tab])
        return diags
