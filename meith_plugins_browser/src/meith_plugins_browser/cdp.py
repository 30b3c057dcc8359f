"""Which raw DevTools Protocol methods `cdp_command` runs by default.

A tab's CDP session can reach past the tab: open and attach to other targets, close or crash
the browser, grant permissions, let downloads write anywhere, hand local files to a file
input, read local files as network resources, or switch off certificate checks. Those are
refused unless the `browser.cdpUnrestricted` setting is on. `Page.navigate` goes through the
same URL policy as `navigate`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from meith_core import ErrorCode, ToolError
from meith_plugins_browser.urls import check_url

_DENIED_DOMAINS: Final[Mapping[str, str]] = {
    "Browser": "it acts on the whole browser, not the tab",
    "Target": "it opens, attaches to or closes other targets",
    "SystemInfo": "it reads information about the machine",
    "Tethering": "it opens ports on the machine",
    "Security": "it can switch off certificate checks",
    "Fetch": "it pauses the tab's requests until they are answered over the protocol",
    "Extensions": "it loads browser extensions from disk",
    "PWA": "it installs web applications into the system",
}
_DENIED_METHODS: Final[Mapping[str, str]] = {
    "Page.setDownloadBehavior": "downloads are refused",
    "DOM.setFileInputFiles": "it gives the page files from this machine",
    "Network.loadNetworkResource": "it can read local files",
}


def check_cdp(method: str, params: dict[str, Any], extra_schemes: Iterable[str]) -> dict[str, Any]:
    """The params to send, or VALIDATION_ERROR for a method the default policy refuses."""
    domain = method.split(".", 1)[0]
    reason = _DENIED_METHODS.get(method) or _DENIED_DOMAINS.get(domain)
    if reason is not None:
        raise ToolError(
            ErrorCode.VALIDATION_ERROR,
            f"CDP method {method} is not allowed through cdp_command: {reason}. "
            "The browser.cdpUnrestricted setting lifts this restriction.",
            {"method": method, "reason": reason},
        )
    if method == "Page.navigate":
        url = params.get("url")
        if not isinstance(url, str):
            raise ToolError(
                ErrorCode.VALIDATION_ERROR, "Page.navigate needs a string url", {"method": method}
            )
        return {**params, "url": check_url(url, extra_schemes)}
    return params
