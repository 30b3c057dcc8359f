"""Starting Chromium made safe: the switches of executable.py, its own sandbox unless it
cannot work here, one context that refuses downloads, runs the popup guard in every frame and
is denied every permission a page can ask for."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import structlog

from meith_core import ErrorCode, ToolError
from meith_plugins_browser.errors import playwright_message
from meith_plugins_browser.executable import (
    IGNORED_DEFAULT_ARGS,
    LAUNCH_ARGS,
    BrowserNotFoundError,
    FoundBrowser,
    find_browser,
)
from meith_plugins_browser.scripts import POPUP_GUARD
from meith_plugins_browser.settings import BrowserSettings

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, CDPSession, Playwright

_log = structlog.get_logger("meith.browser")

LAUNCH_TIMEOUT_MS: Final = 30_000

#: Every permission a page can ask for, denied for the whole context (names Chromium does not
#: know are skipped).
DENIED_PERMISSIONS: Final[tuple[dict[str, Any], ...]] = (
    {"name": "geolocation"},
    {"name": "notifications"},
    {"name": "camera"},
    {"name": "microphone"},
    {"name": "clipboard-read"},
    {"name": "clipboard-write"},
    {"name": "midi"},
    {"name": "midi", "sysex": True},
    {"name": "push", "userVisibleOnly": True},
    {"name": "display-capture"},
    {"name": "background-sync"},
    {"name": "background-fetch"},
    {"name": "periodic-background-sync"},
    {"name": "accelerometer"},
    {"name": "gyroscope"},
    {"name": "magnetometer"},
    {"name": "ambient-light-sensor"},
    {"name": "idle-detection"},
    {"name": "storage-access"},
    {"name": "top-level-storage-access"},
    {"name": "window-management"},
    {"name": "local-fonts"},
    {"name": "speaker-selection"},
    {"name": "payment-handler"},
    {"name": "nfc"},
    {"name": "screen-wake-lock"},
    {"name": "system-wake-lock"},
    {"name": "persistent-storage"},
    {"name": "captured-surface-control"},
    {"name": "keyboard-lock"},
    {"name": "pointer-lock"},
    {"name": "fullscreen", "allowWithoutGesture": True},
    {"name": "web-app-installation"},
    {"name": "local-network-access"},
)


def use_sandbox(setting: bool | None) -> bool:
    """Chromium's own sandbox: on unless set off, or running as root (where it cannot work)."""
    if setting is not None:
        return setting
    geteuid = getattr(os, "geteuid", None)
    return geteuid is None or geteuid() != 0


@dataclass(frozen=True, slots=True)
class Launched:
    """A started browser: its one context, the browser-level CDP session that holds the
    permission denials (Chromium drops them when it detaches), and its pid when known."""

    browser: Browser
    context: BrowserContext
    session: CDPSession
    pid: int | None
    found: FoundBrowser
    sandbox: bool


async def launch(pw: Playwright, settings: BrowserSettings, notices: list[str]) -> Launched:
    """Start the browser and its context; a sandbox the machine cannot give (setting "auto")
    is dropped, and said in `notices`. The caller stops `pw` when this raises."""
    from playwright.async_api import Error as PlaywrightError

    try:
        own = pw.chromium.executable_path
    except Exception:
        own = None
    try:
        found = find_browser(playwright_path=own)
    except BrowserNotFoundError as exc:
        raise ToolError(ErrorCode.TOOL_FAILED, str(exc)) from None
    sandbox = use_sandbox(settings.sandbox)
    while True:
        try:
            browser = await pw.chromium.launch(
                executable_path=found.path,
                headless=settings.headless,
                chromium_sandbox=sandbox,
                args=list(LAUNCH_ARGS),
                ignore_default_args=list(IGNORED_DEFAULT_ARGS),
                timeout=LAUNCH_TIMEOUT_MS,
            )
            break
        except PlaywrightError as exc:
            if sandbox and settings.sandbox is None:
                # "auto": the machine cannot sandbox (e.g. no user namespaces).
                sandbox = False
                notices.append(
                    "Chromium's sandbox is not available on this machine; the browser "
                    "runs without it (set browser.sandbox to silence this)."
                )
                _log.warning("chromium sandbox unavailable", error=playwright_message(exc))
                continue
            raise ToolError(
                ErrorCode.TOOL_FAILED,
                f"Chromium at {found.path} failed to start: {playwright_message(exc)}",
                {"executable": found.path, "source": found.source},
            ) from None
    context = await browser.new_context(
        viewport={"width": settings.viewport.width, "height": settings.viewport.height},
        accept_downloads=False,
    )
    await context.add_init_script(POPUP_GUARD)
    # Kept open: Chromium drops permission overrides when the session that set them detaches.
    session = await browser.new_browser_cdp_session()
    await _deny_permissions(session)
    pid = await _browser_pid(session)
    return Launched(browser, context, session, pid, found, sandbox)


async def _deny_permissions(session: CDPSession) -> None:
    ids = (await session.send("Target.getBrowserContexts")).get("browserContextIds", [])

    async def deny(context_id: str, descriptor: dict[str, Any]) -> None:
        try:
            await session.send(
                "Browser.setPermission",
                {"permission": descriptor, "setting": "denied", "browserContextId": context_id},
            )
        except Exception as exc:  # a permission this Chromium does not know
            _log.debug("permission not denied", permission=descriptor, error=str(exc))

    await asyncio.gather(*(deny(c, d) for c in ids for d in DENIED_PERMISSIONS))


async def _browser_pid(session: CDPSession) -> int | None:
    try:
        info = await session.send("SystemInfo.getProcessInfo")
    except Exception:
        return None
    for proc in info.get("processInfo", []):
        if proc.get("type") == "browser":
            return int(proc["id"])
    return None
