"""One Chromium per runtime, driven through Playwright: started lazily, made safe, watched.

- Started on the first call that needs a page (launch.py), in a fresh temporary profile
  (Playwright's), one browser context for every tab.
- The context denies every permission request, refuses downloads, and runs the popup guard in
  every frame; a window that still appears without the host asking for it is closed at once
  and logged to its opener's console entries.
- If the browser goes away without being asked to, its tabs are reported closed (a warning on
  the next browser call, and their ids say why), and the next call that needs a page starts a
  new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Final

import anyio
import structlog

from meith_core import ErrorCode, ToolError
from meith_plugins_browser.errors import playwright_message
from meith_plugins_browser.executable import FoundBrowser
from meith_plugins_browser.launch import launch
from meith_plugins_browser.logs import console_level
from meith_plugins_browser.scripts import POPUP_LOG_PREFIX
from meith_plugins_browser.settings import BrowserSettings
from meith_plugins_browser.tabs import Tab, TabStore

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, CDPSession, Page, Playwright

_log = structlog.get_logger("meith.browser")

#: Of the 1.5 s the runtime gives all plugins to stop (the rest continues in the background).
CLOSE_BUDGET_S: Final = 0.9
STOP_DRIVER_BUDGET_S: Final = 0.4

CRASHED: Final = "the browser exited unexpectedly"
SELF_CLOSED: Final = "the page was closed (by the page or over CDP)"
#: A page that closed this long before its browser died closed because of it.
RECENT_CLOSE_S: Final = 2.0


class BrowserHost:
    """The browser of one runtime and the tabs in it."""

    def __init__(self) -> None:
        self.tabs = TabStore()
        self.found: FoundBrowser | None = None
        self.launches = 0
        self._pw: Playwright | None = None
        self._browser: Browser | None = None
        self._context: BrowserContext | None = None
        self._browser_pid: int | None = None
        self._browser_session: CDPSession | None = None
        self._lost = False
        self._closing = False
        self._launch_lock = anyio.Lock()
        #: Held while the host creates a page, so the popup check can tell its pages apart.
        self._open_lock = anyio.Lock()
        self._own_pages: set[Page] = set()
        self._notices: list[str] = []
        self._recent_closes: list[tuple[str, float]] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self._stopping: set[asyncio.Future[Any]] = set()

    # -- state --------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._browser is not None and not self._lost and self._browser.is_connected()

    @property
    def closing(self) -> bool:
        return self._closing

    @property
    def browser(self) -> Browser | None:
        return self._browser

    def take_notices(self) -> list[str]:
        """Things the next caller should hear about (a crash and the tabs it closed)."""
        notices, self._notices = self._notices, []
        return notices

    # -- starting -----------------------------------------------------------------------

    async def context(self, settings: BrowserSettings) -> BrowserContext:
        if self.running and self._context is not None:
            return self._context
        async with self._launch_lock:
            if not (self.running and self._context is not None):
                if self._closing:
                    raise ToolError(ErrorCode.RUNTIME_SHUTTING_DOWN, "The browser is shutting down")
                await self._discard()
                await self._launch(settings)
            assert self._context is not None
            return self._context

    async def _launch(self, settings: BrowserSettings) -> None:
        from playwright.async_api import async_playwright

        pw = await async_playwright().start()
        try:
            launched = await launch(pw, settings, self._notices)
            if self._closing:  # the runtime began shutting down meanwhile
                raise ToolError(ErrorCode.RUNTIME_SHUTTING_DOWN, "The browser is shutting down")
        except BaseException:
            # Stopping the driver closes a browser it launched.
            self._in_background(pw.stop())
            raise
        browser, context = launched.browser, launched.context
        browser.on("disconnected", self._on_disconnected)
        context.on("page", self._on_context_page)
        self._pw, self._browser, self._context = pw, browser, context
        self._browser_session = launched.session
        self._browser_pid = launched.pid
        self._lost = False
        self.found = launched.found
        self.launches += 1
        _log.info(
            "browser started",
            executable=launched.found.path,
            version=browser.version,
            headless=settings.headless,
            sandbox=launched.sandbox,
        )

    # -- pages --------------------------------------------------------------------------

    async def new_page(self, settings: BrowserSettings) -> Page:
        """A page of the host's own (a popup check lets it through)."""
        from playwright.async_api import Error as PlaywrightError

        for attempt in (1, 2):
            context = await self.context(settings)
            try:
                async with self._open_lock:
                    page = await context.new_page()
                    self._own_pages.add(page)
                    return page
            except PlaywrightError as exc:
                if attempt == 2 or self.running:
                    raise ToolError(
                        ErrorCode.TOOL_FAILED, f"Could not open a tab: {playwright_message(exc)}"
                    ) from None
                # The browser died under us: start a new one and try once more.
        raise AssertionError("unreachable")

    def watch(self, tab: Tab) -> None:
        """Feed a tab's console and network entries and keep its record in step with the page."""
        page = tab.page

        def on_console(msg: Any) -> None:
            url = (msg.location or {}).get("url") or None
            tab.console.add(console_level(msg.type), msg.text, url)

        def on_page_error(err: Any) -> None:
            name = getattr(err, "name", "") or "Error"
            tab.console.add("error", f"Uncaught {name}: {getattr(err, 'message', err)}")

        def on_navigated(frame: Any) -> None:
            if frame is not page.main_frame:
                return
            tab.nav_seq += 1
            url = frame.url
            if not url.startswith("chrome-error://"):
                tab.url = url
            tab.title = ""
            tab.invalidate_elements("the tab navigated since the ids were issued")

        def on_load(_page: Any) -> None:
            if tab.load_state == "loading":
                tab.load_state = "ready"

        def on_close(_page: Any) -> None:
            self._own_pages.discard(page)
            if self.tabs.find(tab.id) is None:
                return  # closed by the host
            if self._lost or not self.running:
                self.tabs.remove(tab, CRASHED)
                return
            # When the browser dies, its pages report closing just before it does; the
            # disconnect handler corrects the reason of the ones that closed a moment ago.
            self.tabs.remove(tab, SELF_CLOSED)
            self._recent_closes.append((tab.id, time.monotonic()))
            del self._recent_closes[:-100]

        def on_crash(_page: Any) -> None:
            self.tabs.remove(tab, "the page crashed")
            self._notices.append(f"The page of browser tab {tab.id} crashed; the tab was closed.")
            self.spawn(_close_quietly(page))

        def on_download(download: Any) -> None:
            tab.console.add("warn", f"[meith] Download refused: {download.url}", "meith")

        async def on_dialog(dialog: Any) -> None:
            # Leaving a page must not be blocked by a beforeunload prompt nobody can answer.
            leave = dialog.type == "beforeunload"
            verdict = "accepted" if leave else "dismissed"
            tab.console.add(
                "info", f"[meith] {dialog.type} dialog {verdict}: {dialog.message}", "meith"
            )
            with contextlib.suppress(Exception):
                await (dialog.accept() if leave else dialog.dismiss())

        page.on("console", on_console)
        page.on("pageerror", on_page_error)
        page.on("request", lambda r: tab.network.started(r, r.method, r.url, r.resource_type))
        page.on("response", lambda resp: tab.network.responded(resp.request, resp.status))
        page.on("requestfinished", lambda r: tab.network.finished(r))
        page.on("requestfailed", lambda r: tab.network.finished(r, r.failure or "failed"))
        page.on("framenavigated", on_navigated)
        page.on("load", on_load)
        page.on("close", on_close)
        page.on("crash", on_crash)
        page.on("download", on_download)
        page.on("dialog", on_dialog)

    async def close_tab(self, tab: Tab) -> None:
        self.tabs.remove(tab)
        self._own_pages.discard(tab.page)
        await _close_quietly(tab.page)

    async def cdp_session(self, tab: Tab, owner: str) -> CDPSession:
        """The owner's own CDP session on the tab (see claims.py for why one per owner)."""
        session: CDPSession | None = tab.cdp.get(owner)
        if session is None:
            session = tab.cdp[owner] = await self.new_cdp_session(tab)
        return session

    async def new_cdp_session(self, tab: Tab) -> CDPSession:
        if self._context is None:
            raise ToolError(ErrorCode.TOOL_FAILED, "The browser is not running")
        return await self._context.new_cdp_session(tab.page)

    def _on_context_page(self, page: Page) -> None:
        self.spawn(self._vet_page(page))

    async def _vet_page(self, page: Page) -> None:
        """Close any window the host did not open itself (a popup that got past the guard)."""
        async with self._open_lock:
            pass  # the host's own page, if this is one, is registered once the lock is free
        if page in self._own_pages:
            return
        url = page.url
        opener = None
        with contextlib.suppress(Exception):
            opener = await page.opener()
        await _close_quietly(page)
        tab = self.tabs.by_page(opener) if opener is not None else None
        if tab is not None:
            tab.console.add("warn", f"{POPUP_LOG_PREFIX} (new window, closed): {url}", "meith")
        _log.info("closed a popup window", url=url, tabId=tab.id if tab else None)

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run `coro` as a task of the host's (cancelled when the browser closes)."""
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- losing and closing the browser ------------------------------------------------

    def _on_disconnected(self, browser: Browser) -> None:
        if browser is not self._browser or self._closing:
            return
        self._lost = True
        now = time.monotonic()
        lost = [
            tab_id
            for tab_id, when in self._recent_closes
            if now - when < RECENT_CLOSE_S and self.tabs.relabel(tab_id, SELF_CLOSED, CRASHED)
        ]
        self._recent_closes.clear()
        lost += [tab.id for tab in self.tabs]
        for tab in self.tabs:
            self.tabs.remove(tab, CRASHED)
        self._own_pages.clear()
        message = "The browser exited unexpectedly; it starts again on the next open_browser_tab."
        if lost:
            message += f" Its tabs were closed: {', '.join(lost)}."
        self._notices.append(message)
        _log.warning("browser exited unexpectedly", tabs=lost)

    async def _discard(self) -> None:
        """Forget a browser that died (its driver may still be running)."""
        pw, self._pw = self._pw, None
        self._browser = self._context = None
        self._browser_pid = None
        self._browser_session = None
        if pw is not None:
            await _wait(self._in_background(pw.stop()), STOP_DRIVER_BUDGET_S)

    async def close(self) -> None:
        """Close the browser and the Playwright driver, within the shutdown budget.

        What does not finish in time goes on in the background (`wait_stopped`); a browser
        that did not close in time is killed.
        """
        self._closing = True
        browser, pw, pid = self._browser, self._pw, self._browser_pid
        self._browser = self._context = None
        self._browser_session = None
        self._pw = None
        for tab in self.tabs:
            self.tabs.remove(tab, "the runtime shut down")
        self._own_pages.clear()
        for task in list(self._tasks):
            task.cancel()
        closed = browser is None or await _wait(
            self._in_background(browser.close()), CLOSE_BUDGET_S
        )
        if not closed and pid is not None:
            _log.warning("browser did not close in time; killing it", pid=pid)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if pw is not None:
            await _wait(self._in_background(pw.stop()), STOP_DRIVER_BUDGET_S)

    def _in_background(self, coro: Any) -> asyncio.Future[Any]:
        """Run a stop step as a task of its own: a caller's deadline or cancellation must not
        cut it off half-way (that leaks the driver's pipes)."""
        task = asyncio.ensure_future(_quietly(coro))
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)
        return task

    async def wait_stopped(self) -> None:
        """Wait for stop steps that outlived their budget (tests, embedding programs)."""
        if self._stopping:
            await asyncio.wait(set(self._stopping))


async def _wait(task: asyncio.Future[Any], budget_s: float) -> bool:
    """Wait for a task without cancelling it when the budget runs out; True when it finished."""
    done, _ = await asyncio.wait({task}, timeout=budget_s)
    return bool(done)


async def _quietly(coro: Any) -> None:
    with contextlib.suppress(Exception):
        await coro


async def _close_quietly(page: Any) -> None:
    with contextlib.suppress(Exception):
        await page.close()
