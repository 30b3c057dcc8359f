"""The twenty browser tools, in registration order (the order `meith tools` lists them)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

from meith_core import (
    ActsOn,
    Diagnostic,
    ErrorCode,
    ToolContext,
    ToolDefinition,
    ToolError,
    ok_result,
    tool,
)
from meith_plugins_browser import render
from meith_plugins_browser.artifacts import png_size, write_artifact
from meith_plugins_browser.browser import BrowserHost, playwright_message
from meith_plugins_browser.cdp import CdpScope, check_cdp
from meith_plugins_browser.claims import end_claim, on_claimed
from meith_plugins_browser.elements import MAX_ELEMENTS, MAX_SNAPSHOT_CHARS
from meith_plugins_browser.keys import parse_keys
from meith_plugins_browser.logs import now_ms
from meith_plugins_browser.models import (
    CdpArgs,
    ElementArgs,
    LogsArgs,
    NavigateArgs,
    OpenTabArgs,
    ScrollArgs,
    SendKeysArgs,
    SpaceArgs,
    TabArgs,
    TypeTextArgs,
    UseEndArgs,
)
from meith_plugins_browser.ownership import (
    Access,
    Controller,
    check_access,
    check_release,
    claim,
    may_read,
)
from meith_plugins_browser.scripts import COMMIT_CHANGE, EXTRACT_ELEMENTS, FIELD_KIND, SCROLL
from meith_plugins_browser.settings import BrowserSettings, browser_settings
from meith_plugins_browser.tabs import Tab
from meith_plugins_browser.urls import check_url

if TYPE_CHECKING:
    from playwright.async_api import ElementHandle, Response

Diagnostics = list[Diagnostic | dict[str, str]]

OPEN_TIMEOUT_MS = 60_000
#: Tries of a history move while Playwright re-attaches to a page after a failed load.
_DETACHED_RETRIES = 30
#: How long a title read may take before the cached title is used.
TITLE_TIMEOUT_S = 1.0

_FIND_OPTION = """
(el, wanted) => {
  const options = Array.from(el.options);
  const hit = options.find((o) => o.value === wanted)
    || options.find((o) => o.label.trim() === wanted.trim() || o.text.trim() === wanted.trim());
  return hit ? hit.value : null;
}
"""


class BrowserTools:
    def __init__(self, host: BrowserHost) -> None:
        self.host = host

    def definitions(self) -> list[ToolDefinition]:
        c, ro, net = "controls-browser", "read-only", "accesses-network"
        # A new tab acts on the project directory it is opened for (its `cwd` argument, the
        # caller's directory by default); every other tab tool on the directory of the tab it
        # names, whoever calls (docs/plugin-guide.md, "What a tool acts on").
        on_tab = ActsOn.object(self._tab_directory, what="tab")
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
            tool(self.take_screenshot, effect="reads", capabilities=[c, ro], acts_on=on_tab),
            tool(
                self.get_browser_state,
                effect="reads",
                capabilities=[ro, c],
                acts_on=on_tab,
                render=render.state_text,
            ),
            tool(self.click_element, effect="acts", capabilities=[c], acts_on=on_tab),
            tool(self.type_text, effect="acts", capabilities=[c], acts_on=on_tab),
            tool(self.scroll_page, effect="updates", capabilities=[c], acts_on=on_tab),
            tool(self.send_keys, effect="acts", capabilities=[c], acts_on=on_tab),
            tool(self.cdp_command, effect="acts", capabilities=[c, net], acts_on=on_tab),
            tool(
                self.get_console_logs,
                effect="reads",
                capabilities=[ro],
                idempotent=True,
                acts_on=on_tab,
            ),
            tool(self.get_network_logs, effect="reads", capabilities=[ro, net], acts_on=on_tab),
        ]

    def _tab_directory(self, args: Any) -> str | None:
        tab = self.host.tabs.find(getattr(args, "tabId", ""))
        return tab.cwd if tab is not None else None

    # -- tabs ---------------------------------------------------------------------------

    async def get_tabs(self, ctx: ToolContext, args: SpaceArgs) -> Any:
        """List the browser tabs (all spaces, or one) and their owners."""
        ctl = Controller.of(ctx.caller)
        tabs = self.host.tabs.in_space(args.spaceId)
        await self._refresh_titles(tabs)
        listed = [t.to_dict(private=not may_read(t, ctl)) for t in tabs]
        return self._done({"browserTabs": listed, "workspaceTabs": []})

    async def get_active_tab(self, ctx: ToolContext, args: SpaceArgs) -> Any:
        """The active browser tab of a space (default: the space used last), or null."""
        space = args.spaceId or ctx.caller.space_id or self.host.tabs.active_space
        tab = self.host.tabs.active_in(space)
        if tab is None:
            return self._done(None)
        await self._refresh_titles([tab])
        return self._done(tab.to_dict(private=not may_read(tab, Controller.of(ctx.caller))))

    async def open_browser_tab(self, ctx: ToolContext, args: OpenTabArgs) -> Any:
        """Open a new browser tab pointing at a URL and focus it."""
        settings = self._settings(ctx)
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
        return self._done(tab.to_dict(), diags)

    async def navigate(self, ctx: ToolContext, args: NavigateArgs) -> Any:
        """Load a URL in a tab (http, https, data: or about:blank by default)."""
        settings = self._settings(ctx)
        url = check_url(args.url, settings.extraSchemes)
        async with self._use(ctx, args.tabId, Access.CONTROL) as tab:
            diags = await self._navigate(
                tab, lambda: tab.page.goto(url, timeout=settings.navigationTimeoutMs), settings, url
            )
        return self._done(tab.to_dict(), diags)

    async def _history(self, ctx: ToolContext, tab_id: str, step: str) -> Any:
        """go_back / go_forward / refresh: one guarded navigation of the tab's page."""
        settings = self._settings(ctx)
        async with self._use(ctx, tab_id, Access.CONTROL) as tab:
            move = getattr(tab.page, step)  # page.go_back, page.go_forward or page.reload
            diags = await self._navigate(
                tab, lambda: move(timeout=settings.navigationTimeoutMs), settings
            )
        return self._done(tab.to_dict(), diags)

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
        tab = self._tab(ctx, args.tabId, Access.READ)
        self.host.tabs.activate(tab)
        await self._quietly(tab.page.bring_to_front())
        await self._refresh_titles([tab])
        return self._done(tab.to_dict())

    async def close_browser_tab(self, ctx: ToolContext, args: TabArgs) -> Any:
        """Close a tab; {closed: false} when there is no such tab."""
        tab = self.host.tabs.find(args.tabId)
        if tab is None:
            return self._done({"closed": False})
        check_access(tab, Controller.of(ctx.caller), Access.CONTROL)
        await self.host.close_tab(tab)
        return self._done({"closed": True})

    async def browser_use_start(self, ctx: ToolContext, args: TabArgs) -> Any:
        """Claim a tab for the calling session (agents and plugins must, before controlling it)."""
        tab = self.host.tabs.get(args.tabId)
        ctl = Controller.of(ctx.caller)
        if claim(tab, ctl):
            await on_claimed(tab, ctl.principal)
        return self._done(tab.to_dict())

    async def browser_use_end(self, ctx: ToolContext, args: UseEndArgs) -> Any:
        """Release the calling session's claim on a tab (the tab is reset to about:blank)."""
        tab = self.host.tabs.get(args.tabId)
        check_release(tab, Controller.of(ctx.caller), force=args.force)
        if tab.owner_id is not None:
            await end_claim(self.host, tab, tab.owner_id)
            self._raise_if_closed(tab)
        return self._done(tab.to_dict())

    # -- reading the page ---------------------------------------------------------------

    async def take_screenshot(self, ctx: ToolContext, args: TabArgs) -> Any:
        """Capture the visible part of a tab as a PNG under $MEITH_HOME/artifacts/."""
        from playwright.async_api import Error as PlaywrightError

        settings = self._settings(ctx)
        tab = self._tab(ctx, args.tabId, Access.READ)
        try:
            png = await tab.page.screenshot(type="png", timeout=settings.navigationTimeoutMs)
            width, height = png_size(png)
        except (PlaywrightError, ValueError) as exc:
            self._raise_if_closed(tab)
            raise ToolError(
                ErrorCode.TOOL_FAILED,
                f"Screenshot of tab {tab.id} failed: {playwright_message(exc)}",
                {"tabId": tab.id},
            ) from None
        path = write_artifact(
            ctx.home.artifacts_dir, f"screenshot-{tab.id}-{now_ms()}", ".png", png
        )
        ctx.artifact("image/png", name=path.name, path=path)
        return self._done({"tabId": tab.id, "width": width, "height": height, "path": str(path)})

    async def get_browser_state(self, ctx: ToolContext, args: TabArgs) -> Any:
        """URL, title, viewport, interactive elements (ids el-N, valid until the next read or
        navigation) and a snapshot of the page: an outline of its visible text, headings and
        controls with their el-N references, so what changed after an action shows in one read."""
        from playwright.async_api import Error as PlaywrightError

        async with self._use(ctx, args.tabId, Access.READ) as tab:
            ids = tab.element_ids(Controller.of(ctx.caller).principal)
            page = tab.page
            for attempt in (1, 2):
                seq = tab.nav_seq
                try:
                    handle = await page.evaluate_handle(
                        EXTRACT_ELEMENTS,
                        {"start": ids.next, "limit": MAX_ELEMENTS, "maxChars": MAX_SNAPSHOT_CHARS},
                    )
                    info = await handle.evaluate("(a) => a[0]")
                except PlaywrightError as exc:
                    self._raise_if_closed(tab)
                    if attempt == 1:  # the page was navigating: read the new document
                        await self._quietly(
                            page.wait_for_load_state("domcontentloaded", timeout=5000)
                        )
                        continue
                    raise self._page_failure(
                        tab, f"Could not read the page of tab {tab.id}", exc
                    ) from None
                if tab.nav_seq == seq:
                    break
                await self._quietly(handle.dispose())
            else:
                raise ToolError(
                    ErrorCode.TOOL_FAILED,
                    f"Tab {tab.id} kept navigating while its state was read; try again",
                    {"tabId": tab.id},
                )
            old = ids.replace(len(info["elements"]), handle)
            if old is not None:
                await self._quietly(old.handle.dispose())
            tab.url, tab.title = info["url"], info["title"]
        return self._done(
            {
                "tabId": tab.id,
                "url": info["url"],
                "title": info["title"],
                "viewport": info["viewport"],
                "scroll": info["scroll"],
                "elements": info["elements"],
                "truncated": info["total"] > len(info["elements"]),
                "snapshot": info["snapshot"],
                "snapshotTruncated": info["snapshotTruncated"],
            }
        )

    # -- acting on the page -------------------------------------------------------------

    async def click_element(self, ctx: ToolContext, args: ElementArgs) -> Any:
        """Click an element (el-N from the latest get_browser_state) like a user would."""
        from playwright.async_api import Error as PlaywrightError

        settings = self._settings(ctx)
        async with self._use(ctx, args.tabId, Access.CONTROL) as tab:
            element = await self._element(ctx, tab, args.elementId)
            seq = tab.nav_seq
            try:
                await element.click(timeout=settings.actionTimeoutMs)
            except PlaywrightError as exc:
                raise self._element_error(tab, args.elementId, "click", exc) from None
            diags = await self._settle(tab, seq, settings)
        return self._done({"clicked": args.elementId}, diags)

    async def type_text(self, ctx: ToolContext, args: TypeTextArgs) -> Any:
        """Replace a field's value with text (real input and change events); a select picks the option."""
        from playwright.async_api import Error as PlaywrightError

        settings = self._settings(ctx)
        async with self._use(ctx, args.tabId, Access.CONTROL) as tab:
            element = await self._element(ctx, tab, args.elementId)
            try:
                kind = await element.evaluate(FIELD_KIND)
                if kind == "select":
                    value = await element.evaluate(_FIND_OPTION, args.text)
                    if value is None:
                        raise ToolError(
                            ErrorCode.TOOL_FAILED,
                            f"Element {args.elementId} has no option with the value or label {args.text!r}",
                            {"tabId": tab.id, "elementId": args.elementId},
                        )
                    await element.select_option(value=value, timeout=settings.actionTimeoutMs)
                elif kind == "text":
                    await element.fill(args.text, timeout=settings.actionTimeoutMs)
                    await element.evaluate(COMMIT_CHANGE)
                else:
                    raise ToolError(
                        ErrorCode.TOOL_FAILED,
                        f"Element {args.elementId} is not a text field, text area, editable "
                        "element or select; it cannot take typed text",
                        {"tabId": tab.id, "elementId": args.elementId},
                    )
            except PlaywrightError as exc:
                raise self._element_error(tab, args.elementId, "type into", exc) from None
        # Counted in UTF-16 code units (JavaScript's length), as the page itself counts.
        return self._done({"typed": len(args.text.encode("utf-16-le")) // 2})

    async def scroll_page(self, ctx: ToolContext, args: ScrollArgs) -> Any:
        """Scroll a tab: to toX/toY when given, else by deltaX/deltaY."""
        from playwright.async_api import Error as PlaywrightError

        async with self._use(ctx, args.tabId, Access.CONTROL) as tab:
            try:
                pos = await tab.page.evaluate(
                    SCROLL, [args.deltaX, args.deltaY, args.toX, args.toY]
                )
            except PlaywrightError as exc:
                raise self._page_failure(tab, f"Could not scroll tab {tab.id}", exc) from None
        return self._done({"ok": True, "scrollX": pos["scrollX"], "scrollY": pos["scrollY"]})

    async def send_keys(self, ctx: ToolContext, args: SendKeysArgs) -> Any:
        """Press a named key or combination (Enter, Tab, Control+a...) or type literal text into the focused element."""
        from playwright.async_api import Error as PlaywrightError

        settings = self._settings(ctx)
        keys = parse_keys(args.keys)
        async with self._use(ctx, args.tabId, Access.CONTROL) as tab:
            seq = tab.nav_seq
            try:
                if keys.kind == "press":
                    await tab.page.keyboard.press(keys.value)
                else:
                    await tab.page.keyboard.type(keys.value)
            except PlaywrightError as exc:
                raise self._page_failure(tab, f"Could not send keys to tab {tab.id}", exc) from None
            diags = await self._settle(tab, seq, settings)
        return self._done({"ok": True}, diags)

    async def cdp_command(self, ctx: ToolContext, args: CdpArgs) -> Any:
        """Run a raw Chrome DevTools Protocol method on the tab's CDP session."""
        from playwright.async_api import Error as PlaywrightError

        settings = self._settings(ctx)
        params = dict(args.params or {})
        if not settings.cdpUnrestricted:
            scope = CdpScope(tuple(settings.extraSchemes), file_root=ctx.grant_scope)
            params = check_cdp(args.method, params, scope)
        # Under the tab's lock: a claim cannot end (and be cleaned up) half-way through, so
        # no CDP session of a former owner outlives its claim.
        async with self._use(ctx, args.tabId, Access.CONTROL) as tab:
            try:
                session = await self.host.cdp_session(tab, Controller.of(ctx.caller).principal)
                result = await session.send(args.method, params)
            except PlaywrightError as exc:
                raise self._page_failure(
                    tab, f"CDP {args.method} failed", exc, method=args.method
                ) from None
        return self._done({"tabId": tab.id, "method": args.method, "result": result})

    # -- logs ---------------------------------------------------------------------------

    async def get_console_logs(self, ctx: ToolContext, args: LogsArgs) -> Any:
        """A tab's console entries, most recent last (up to 1,000 kept)."""
        tab = self._tab(ctx, args.tabId, Access.READ)
        return self._done(tab.console.recent(args.limit))

    async def get_network_logs(self, ctx: ToolContext, args: LogsArgs) -> Any:
        """A tab's network requests with status, type, timing and failures, most recent last."""
        tab = self._tab(ctx, args.tabId, Access.READ)
        return self._done(tab.network.recent(args.limit))

    # -- helpers ------------------------------------------------------------------------

    def _settings(self, ctx: ToolContext) -> BrowserSettings:
        return browser_settings(ctx.settings)

    def _tab(self, ctx: ToolContext, tab_id: str, access: Access) -> Tab:
        """The tab, if the caller may read or control it: the one access check of every tool."""
        tab = self.host.tabs.get(tab_id)
        check_access(tab, Controller.of(ctx.caller), access)
        return tab

    @asynccontextmanager
    async def _use(self, ctx: ToolContext, tab_id: str, access: Access) -> AsyncIterator[Tab]:
        """The tab under its lock, access checked again once the lock is held (a claim may
        have ended, and the tab been reset, while the call waited for it)."""
        tab = self._tab(ctx, tab_id, access)
        async with tab.lock:
            self._raise_if_closed(tab)
            check_access(tab, Controller.of(ctx.caller), access)
            yield tab

    def _done(self, content: Any, diagnostics: Diagnostics | None = None) -> Any:
        notes: Diagnostics = [{"level": "warn", "message": n} for n in self.host.take_notices()]
        notes.extend(diagnostics or [])
        return ok_result(content, diagnostics=notes) if notes else content

    def _raise_if_closed(self, tab: Tab) -> None:
        if self.host.tabs.find(tab.id) is None:
            self.host.tabs.get(tab.id)  # raises with the reason the tab went away

    def _page_failure(self, tab: Tab, what: str, exc: Exception, **details: Any) -> ToolError:
        """The error for a Playwright failure on a tab: the tab's own fate when it went away
        (raised here), else TOOL_FAILED saying what failed and why."""
        self._raise_if_closed(tab)
        return ToolError(
            ErrorCode.TOOL_FAILED,
            f"{what}: {playwright_message(exc)}",
            {"tabId": tab.id, **details},
        )

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
            self._raise_if_closed(tab)
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
        await self._refresh_titles([tab])
        return diags

    async def _settle(self, tab: Tab, seq: int, settings: BrowserSettings) -> Diagnostics:
        """After input: when it started a navigation, wait for the new page to load."""
        if tab.nav_seq == seq:
            return []
        from playwright.async_api import Error as PlaywrightError

        tab.load_state, tab.error = "loading", None
        try:
            await tab.page.wait_for_load_state("load", timeout=settings.navigationTimeoutMs)
            tab.load_state = "ready"
        except PlaywrightError:
            self._raise_if_closed(tab)
            return [{"level": "warn", "message": f"Tab {tab.id} is still loading after the input"}]
        return []

    async def _element(self, ctx: ToolContext, tab: Tab, element_id: str) -> ElementHandle:
        from playwright.async_api import Error as PlaywrightError

        ids = tab.element_ids(Controller.of(ctx.caller).principal)
        extraction, index = ids.resolve(tab.id, element_id)
        try:
            handle = await extraction.handle.evaluate_handle("(a, i) => a[i]", index)
        except PlaywrightError as exc:
            raise self._element_error(tab, element_id, "reach", exc) from None
        element: ElementHandle | None = handle.as_element()
        if element is None:
            raise ToolError(
                ErrorCode.TOOL_FAILED,
                f"Element id {element_id} does not resolve to an element of tab {tab.id}",
                {"tabId": tab.id, "elementId": element_id},
            )
        return element

    def _element_error(self, tab: Tab, element_id: str, verb: str, exc: BaseException) -> ToolError:
        self._raise_if_closed(tab)
        message = playwright_message(exc)
        details = {"tabId": tab.id, "elementId": element_id}
        lowered = message.lower()
        if "not attached" in lowered or "context was destroyed" in lowered or "disposed" in lowered:
            return ToolError(
                ErrorCode.TOOL_FAILED,
                f"Element id {element_id} is stale: the element is no longer in the page. Call "
                "get_browser_state again and use the new ids.",
                {**details, "reason": "stale"},
            )
        return ToolError(
            ErrorCode.TOOL_FAILED, f"Could not {verb} element {element_id}: {message}", details
        )

    async def _refresh_titles(self, tabs: list[Tab]) -> None:
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

    @staticmethod
    async def _quietly(awaitable: Awaitable[Any]) -> None:
        try:
            await awaitable
        except Exception:
            pass
