"""Finding a Chromium to drive, and the command-line switches it runs with."""

from __future__ import annotations

import glob
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass

ENV_VAR = "MEITH_BROWSER_EXECUTABLE"

#: Looked up on PATH, in this order, when neither the variable nor Playwright's own browser is there.
PATH_NAMES: tuple[str, ...] = (
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
    "chrome",
)

INSTALL_HINT = (
    "No Chromium browser was found: run `playwright install chromium`, install your "
    "distribution's chromium package (e.g. `apt-get install chromium`), or set "
    f"{ENV_VAR} to the path of a Chrome or Chromium executable."
)

#: Added to Playwright's own switches. The browser must make no connections of its own
#: (no component updates, sync, field trials or QUIC probes), and must not need a GPU.
LAUNCH_ARGS: tuple[str, ...] = (
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-quic",
    "--no-pings",
    "--no-first-run",
    "--disable-gpu",
)

#: Playwright switches we do not want: popups are blocked by meith (see safety.py), and the
#: browser's own popup blocker is a second line of defence.
IGNORED_DEFAULT_ARGS: tuple[str, ...] = ("--disable-popup-blocking",)


class BrowserNotFoundError(RuntimeError):
    """No usable browser; the message says how to get one."""


@dataclass(frozen=True, slots=True)
class FoundBrowser:
    path: str
    source: str  # "env" | "playwright" | "path"


def _is_executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_browser(
    *,
    env: Mapping[str, str] | None = None,
    playwright_path: str | None = None,
    which: Callable[[str], str | None] = shutil.which,
) -> FoundBrowser:
    """`MEITH_BROWSER_EXECUTABLE`, then Playwright's installed Chromium, then PATH."""
    env = os.environ if env is None else env
    configured = env.get(ENV_VAR, "").strip()
    if configured:
        path = os.path.expanduser(configured)
        if not _is_executable(path):
            raise BrowserNotFoundError(
                f"{ENV_VAR} is set to {configured!r}, which is not an executable file; "
                "point it at a Chrome or Chromium executable or unset it."
            )
        return FoundBrowser(path, "env")
    if playwright_path and _is_executable(playwright_path):
        return FoundBrowser(playwright_path, "playwright")
    for name in PATH_NAMES:
        found = which(name)
        if found:
            return FoundBrowser(found, "path")
    raise BrowserNotFoundError(INSTALL_HINT)


def playwright_download() -> str | None:
    """The Chromium `playwright install chromium` downloaded, found without starting
    Playwright (its driver is a Node process): its default cache, or
    `PLAYWRIGHT_BROWSERS_PATH`."""
    root = os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or os.path.expanduser(
        "~/.cache/ms-playwright"
    )
    for pattern in (
        "chromium-*/chrome-linux*/chrome",
        "chromium-*/chrome-mac*/Chromium.app/Contents/MacOS/Chromium",
    ):
        found = sorted(glob.glob(os.path.join(root, pattern)))
        if found:
            return found[-1]
    return None


def health_check() -> dict[str, str]:
    """The plugin's health check: which Chromium a browser tool would start, or how to get one."""
    try:
        found = find_browser(playwright_path=playwright_download())
    except BrowserNotFoundError as exc:
        return {"name": "chromium", "status": "degraded", "message": str(exc)}
    return {"name": "chromium", "status": "ok", "message": f"{found.path} ({found.source})"}
