"""How every browser tool reaches a tab and answers: the one access check (made again under
the tab's lock), the host's notices with the result, and a Playwright failure as the tab's own
fate when it went away."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Any, Final

import anyio

from meith_core import Diagnostic, ErrorCode, ToolContext, ToolError, ok_result
from meith_plugins_browser.browser import BrowserHost
from meith_plugins_browser.errors import playwright_message
from meith_plugins_browser.ownership import Access, Controller, check_access
from meith_plugins_browser.tabs import Tab

Diagnostics = list[Diagnostic | dict[str, str]]

#: How long a title read may take before the cached title is used.
TITLE_TIMEOUT_S: Final = 1.0


class TabAccess:
    """The tabs of one browser host, as the tools reach them."""

    def __init__(self, host: BrowserHost) -> None:
        self.host = host

    def directory(self, args: Any) -> str | None:
        """The directory of the tab a call names: what a tool on an existing tab acts on
        (docs/plugin-guide.md, "What a tool acts on")."""
        tab = self.host.tabs.find(getattr(args, "tabId", ""))
        return tab.cwd if tab is not None else None

    def tab(self, ctx: ToolContext, tab_id: str, access: Access) -> Tab:
        """The tab, if the caller may read or control it: the one access check of every tool."""
        tab = self.host.tabs.get(tab_id)
        check_access(tab, Controller.of(ctx.caller), access)
        return tab

    @asynccontextmanager
    async def use(self, ctx: ToolContext, tab_id: str, access: Access) -> AsyncIterator[Tab]:
        """The tab under its lock, access checked again once the lock is held (a claim may
        have ended, and the tab been reset, while the call waited for it)."""
        tab = self.tab(ctx, tab_id, access)
        async with tab.lock:
            self.raise_if_closed(tab)
            check_access(tab, Controller.of(ctx.caller), access)
            yield tab

    def done(self, content: Any, diagnostics: Diagnostics | None = None) -> Any:
        notes: Diagnostics = [{"level": "warn", "message": n} for n in self.host.take_notices()]
        notes.extend(diagnostics or [])
        return ok_result(content, diagnostics=notes) if notes else content

    def raise_if_closed(self, tab: Tab) -> None:
        if self.host.tabs.find(tab.id) is None:
            self.host.tabs.get(tab.id)  # raises with the reason the tab went away

    def page_failure(self, tab: Tab, what: str, exc: Exception, **details: Any) -> ToolError:
        """The error for a Playwright failure on a tab: the tab's own fate when it went away
        (raised here), else TOOL_FAILED saying what failed and why."""
        self.raise_if_closed(tab)
        return ToolError(
            ErrorCode.TOOL_FAILED,
            f"{what}: {playwright_message(exc)}",
            {"tabId": tab.id, **details},
        )

    async def refresh_titles(self, tabs: list[Tab]) -> None:
        async def one(tab: Tab) -> None:
            with anyio.move_on_after(TITLE_TIMEOUT_S):
                try:
                    tab.title = await tab.page.title()
                except Exception:
                    pass

        if not tabs:
            return
        async with anyio.create_task_group() as tg:
            for tab in tabs:
                tg.start_soon(one, tab)


async def quietly(awaitable: Awaitable[Any]) -> None:
    try:
        await awaitable
    except Exception:
        pass
