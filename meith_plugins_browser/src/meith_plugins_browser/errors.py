"""Playwright's errors as a caller reads them."""

from __future__ import annotations

import re
from typing import Final

#: "Page.goto: " and the like at the start of Playwright's messages.
_API_PREFIX: Final = re.compile(r"^(?:[A-Z][A-Za-z]*\.[a-z_]+: )+")


def playwright_message(exc: BaseException) -> str:
    """The useful first line of a Playwright error (no call log, no `Error:` prefix)."""
    text = str(getattr(exc, "message", None) or exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    line = _API_PREFIX.sub("", line.removeprefix("Error: "))
    return line[:500]
