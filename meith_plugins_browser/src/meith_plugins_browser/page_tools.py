"""The page tools: reading a tab's page (screenshot, state, console and network logs) and
acting on it (click, type, scroll, keys, raw CDP)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from meith_core import ActsOn, ErrorCode, ToolContext, ToolDefinition, ToolError, tool
from meith_plugins_browser import render
from meith_plugins_browser.artifacts import png_size, write_artifact
from meith_plugins_browser.browser import BrowserHost
from meith_plugins_browser.cdp import CdpScope, check_cdp
from meith_plugins_browser.elements import MAX_ELEMENTS, MAX_SNAPSHOT_CHARS
from meith_plugins_browser.errors import playwright_message
from meith_plugins_browser.keys import parse_keys
from meith_plugins_browser.logs import now_ms
from meith_plugins_browser.models import (
    CdpArgs,
    ElementArgs,
    LogsArgs,
    ScrollArgs,
    SendKeysArgs,
    TabArgs,
    TypeTextArgs,
)
from meith_plugins_browser.ownership import Access, Controller
from meith_plugins_browser.scripts import COMMIT_CHANGE, EXTRACT_ELEMENTS, FIELD_KIND, SCROLL
from meith_plugins_browser.settings import BrowserSettings, browser_settings
from meith_plugins_browser.tab_access import Diagnostics, TabAccess, quietly
from meith_plugins_browser.tabs import Tab

if TYPE_CHECKING:
    from playwright.async_api import ElementHandle

_FIND_OPTION: Final = """
(el, wanted) => {
  const options = Array.from(el.options);
  const hit = options.find((o) => o.value === wanted)
    || options.find((o) => o.label.trim() === wanted.trim() || o.text.trim() === wanted.trim());
  return hit ? hit.value : null;
}
"""


class PageTools:
    """The browser host's tabs and the tools that read and act on their pages."""

    def __init__(self, host: BrowserHost) -> None:
        self.host = host
        self.access = TabAccess(host)

    def definitions(self) -> list[ToolDefinition]:
        c, ro, net = "controls-browser", "read-only", "accesses-network"
        # Each acts on the directory of the tab it names, whoever calls
        # (docs/plugin-guide.md, "What a tool acts on").
        on_tab = ActsOn.object(self.access.directory, what="tab")
        return [
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

    async def take_screenshot(self, ctx: ToolContext, args: TabArgs) -> Any:
        """Capture the visible part of a tab as a PNG under $MEITH_HOME/artifacts/."""
        from playwright.async_api import Error as PlaywrightError

        settings = browser_settings(ctx.settings)
        tab = self.access.tab(ctx, args.tabId, Access.READ)
        try:
            png = await tab.page.screenshot(type="png", timeout=settings.navigationTimeoutMs)
            width, height = png_size(png)
        except (PlaywrightError, ValueError) as exc:
            self.access.raise_if_closed(tab)
            raise ToolError(
                ErrorCode.TOOL_FAILED,
                f"Screenshot of tab {tab.id} failed: {playwright_message(exc)}",
                {"tabId": tab.id},
            ) from None
        path = write_artifact(
            ctx.home.artifacts_dir, f"screenshot-{tab.id}-{now_ms()}", ".png", png
        )
        ctx.artifact("image/png", name=path.name, path=path)
        return self.access.done(
            {"tabId": tab.id, "width": width, "height": height, "path": str(path)}
        )

    async def get_browser_state(self, ctx: ToolContext, args: TabArgs) -> Any:
        """URL, title, viewport, interactive elements (ids el-N, valid until the next read or
        navigation) and a snapshot of the page: an outline of its visible text, headings and
        controls with their el-N references, so what changed after an action shows in one read."""
        from playwright.async_api import Error as PlaywrightError

        async with self.access.use(ctx, args.tabId, Access.READ) as tab:
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
                    self.access.raise_if_closed(tab)
                    if attempt == 1:  # the page was navigating: read the new document
                        await quietly(page.wait_for_load_state("domcontentloaded", timeout=5000))
                        continue
                    raise self.access.page_failure(
                        tab, f"Could not read the page of tab {tab.id}", exc
                    ) from None
                if tab.nav_seq == seq:
                    break
                await quietly(handle.dispose())
            else:
                raise ToolError(
                    ErrorCode.TOOL_FAILED,
                    f"Tab {tab.id} kept navigating while its state was read; try again",
                    {"tabId": tab.id},
                )
            old = ids.replace(len(info["elements"]), handle)
            if old is not None:
                await quietly(old.handle.dispose())
            tab.url, tab.title = info["url"], info["title"]
        return self.access.done(
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

        settings = browser_settings(ctx.settings)
        async with self.access.use(ctx, args.tabId, Access.CONTROL) as tab:
            element = await self._element(ctx, tab, args.elementId)
            seq = tab.nav_seq
            try:
                await element.click(timeout=settings.actionTimeoutMs)
            except PlaywrightError as exc:
                raise self._element_error(tab, args.elementId, "click", exc) from None
            diags = await self._settle(tab, seq, settings)
        return self.access.done({"clicked": args.elementId}, diags)

    async def type_text(self, ctx: ToolContext, args: TypeTextArgs) -> Any:
        """Replace a field's value with text (real input and change events); a select picks the option."""
        from playwright.async_api import Error as PlaywrightError

        settings = browser_settings(ctx.settings)
        async with self.access.use(ctx, args.tabId, Access.CONTROL) as tab:
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
        return self.access.done({"typed": len(args.text.encode("utf-16-le")) // 2})

    async def scroll_page(self, ctx: ToolContext, args: ScrollArgs) -> Any:
        """Scroll a tab: to toX/toY when given, else by deltaX/deltaY."""
        from playwright.async_api import Error as PlaywrightError

        async with self.access.use(ctx, args.tabId, Access.CONTROL) as tab:
            try:
                pos = await tab.page.evaluate(
                    SCROLL, [args.deltaX, args.deltaY, args.toX, args.toY]
                )
            except PlaywrightError as exc:
                raise self.access.page_failure(tab, f"Could not scroll tab {tab.id}", exc) from None
        return self.access.done({"ok": True, "scrollX": pos["scrollX"], "scrollY": pos["scrollY"]})

    async def send_keys(self, ctx: ToolContext, args: SendKeysArgs) -> Any:
        """Press a named key or combination (Enter, Tab, Control+a...) or type literal text into the focused element."""
        from playwright.async_api import Error as PlaywrightError

        settings = browser_settings(ctx.settings)
        keys = parse_keys(args.keys)
        async with self.access.use(ctx, args.tabId, Access.CONTROL) as tab:
            seq = tab.nav_seq
            try:
                if keys.kind == "press":
                    await tab.page.keyboard.press(keys.value)
                else:
                    await tab.page.keyboard.type(keys.value)
            except PlaywrightError as exc:
                raise self.access.page_failure(
                    tab, f"Could not send keys to tab {tab.id}", exc
                ) from None
            diags = await self._settle(tab, seq, settings)
        return self.access.done({"ok": True}, diags)

    async def cdp_command(self, ctx: ToolContext, args: CdpArgs) -> Any:
        """Run a raw Chrome DevTools Protocol method on the tab's CDP session."""
        from playwright.async_api import Error as PlaywrightError

        settings = browser_settings(ctx.settings)
        params = dict(args.params or {})
        if not settings.cdpUnrestricted:
            scope = CdpScope(tuple(settings.extraSchemes), file_root=ctx.grant_scope)
            params = check_cdp(args.method, params, scope)
        # Under the tab's lock: a claim cannot end (and be cleaned up) half-way through, so
        # no CDP session of a former owner outlives its claim.
        async with self.access.use(ctx, args.tabId, Access.CONTROL) as tab:
            try:
                session = await self.host.cdp_session(tab, Controller.of(ctx.caller).principal)
                result = await session.send(args.method, params)
            except PlaywrightError as exc:
                raise self.access.page_failure(
                    tab, f"CDP {args.method} failed", exc, method=args.method
                ) from None
        return self.access.done({"tabId": tab.id, "method": args.method, "result": result})

    # -- logs ---------------------------------------------------------------------------

    async def get_console_logs(self, ctx: ToolContext, args: LogsArgs) -> Any:
        """A tab's console entries, most recent last (up to 1,000 kept)."""
        tab = self.access.tab(ctx, args.tabId, Access.READ)
        return self.access.done(tab.console.recent(args.limit))

    async def get_network_logs(self, ctx: ToolContext, args: LogsArgs) -> Any:
        """A tab's network requests with status, type, timing and failures, most recent last."""
        tab = self.access.tab(ctx, args.tabId, Access.READ)
        return self.access.done(tab.network.recent(args.limit))

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
            self.access.raise_if_closed(tab)
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
        self.access.raise_if_closed(tab)
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
