"""Which URLs the navigation tools may open.

By default: `http:`, `https:`, `data:` and `about:blank`. Everything else (`file:`,
`view-source:`, `chrome:`, `javascript:`, `blob:`, ...) is a VALIDATION_ERROR unless the
`browser.extraSchemes` setting names its scheme.

The URL is first cleaned the way the WHATWG URL parser does (leading/trailing C0 controls and
spaces stripped, tabs and newlines removed), and the cleaned string is what gets navigated, so
`" javascript:..."` or `"java\\tscript:..."` cannot slip past the check.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from meith_core import ErrorCode, ToolError

DEFAULT_SCHEMES: frozenset[str] = frozenset({"http", "https", "data"})
_STRIP = "".join(chr(c) for c in range(0x21))  # C0 controls and space
_TAB_NEWLINE = re.compile(r"[\t\n\r]")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_ABOUT_BLANK = re.compile(r"^about:blank(?:[?#].*)?$", re.IGNORECASE | re.DOTALL)


def check_url(url: str, extra_schemes: Iterable[str] = ()) -> str:
    """The cleaned URL when navigation to it is allowed; VALIDATION_ERROR otherwise."""
    cleaned = _TAB_NEWLINE.sub("", url.strip(_STRIP))
    match = _SCHEME.match(cleaned)
    if match is None:
        raise ToolError(
            ErrorCode.VALIDATION_ERROR,
            f"URL {url!r} is not absolute: include the scheme, e.g. http://{cleaned or 'localhost:3000'}",
            {"url": url},
        )
    scheme = match.group(1).lower()
    allowed = DEFAULT_SCHEMES | {s.lower() for s in extra_schemes}
    if scheme == "about" and (_ABOUT_BLANK.match(cleaned) or "about" in allowed):
        return cleaned
    if scheme not in allowed:
        raise ToolError(
            ErrorCode.VALIDATION_ERROR,
            f"Navigation to {scheme}: URLs is not allowed; the browser opens http, https, data "
            "and about:blank URLs (the browser.extraSchemes setting can allow more)",
            {"url": url, "scheme": scheme, "allowed": sorted(allowed | {"about:blank"})},
        )
    if scheme in ("http", "https"):
        try:
            host = urlsplit(cleaned).hostname
        except ValueError as exc:
            raise ToolError(
                ErrorCode.VALIDATION_ERROR, f"URL {url!r} is invalid: {exc}", {"url": url}
            ) from None
        if not host:
            raise ToolError(
                ErrorCode.VALIDATION_ERROR,
                f"URL {url!r} has no host",
                {"url": url, "scheme": scheme},
            )
    return cleaned
