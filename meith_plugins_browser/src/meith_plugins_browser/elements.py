"""Element ids (`el-N`) and the page state they belong to.

Numbers keep counting up across extractions of a tab, so an id from an earlier extraction is
recognisably stale rather than silently meaning another element: only ids of the last
extraction of the current document resolve. The nodes themselves stay in a handle held by the
host, so an id resolves to exactly the node it described, or fails.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from meith_core import ErrorCode, ToolError

ELEMENT_ID_RE: Final = re.compile(r"^el-(\d+)$")
#: More than this many interactive elements are reported as truncated.
MAX_ELEMENTS: Final = 1000
#: Longest page snapshot `get_browser_state` returns (characters); past it, `snapshotTruncated`.
MAX_SNAPSHOT_CHARS: Final = 20_000


@dataclass(slots=True)
class Extraction:
    start: int
    count: int
    #: A JSHandle of `[info, ...nodes]` in the page (see scripts.EXTRACT_ELEMENTS).
    handle: Any


class ElementIds:
    def __init__(self) -> None:
        self.next = 0
        self.current: Extraction | None = None
        self.stale_reason = "the page has not been read yet"

    def replace(self, count: int, handle: Any) -> Extraction | None:
        """Make a new extraction current (ids `next .. next+count-1`); returns the old one."""
        old = self.current
        self.current = Extraction(self.next, count, handle)
        self.next += count
        return old

    def invalidate(self, reason: str) -> Extraction | None:
        """The document changed: every issued id is stale. Returns the extraction dropped."""
        old = self.current
        self.current = None
        self.stale_reason = reason
        return old

    def resolve(self, tab_id: str, element_id: str) -> tuple[Extraction, int]:
        """The extraction and index in its handle (1-based: slot 0 is the info) of `el-N`."""
        match = ELEMENT_ID_RE.match(element_id)
        number = int(match.group(1)) if match else -1
        details = {"tabId": tab_id, "elementId": element_id}
        current = self.current
        if match is None or number >= self.next:
            raise ToolError(
                ErrorCode.TOOL_FAILED,
                f"Unknown element id {element_id} for tab {tab_id}; element ids come from "
                "get_browser_state",
                {**details, "reason": "unknown"},
            )
        if current is None or number < current.start:
            why = (
                self.stale_reason
                if current is None
                else "the page was read again by a later get_browser_state"
            )
            raise ToolError(
                ErrorCode.TOOL_FAILED,
                f"Element id {element_id} is stale: {why}. Call get_browser_state again and "
                "use the new ids.",
                {**details, "reason": "stale"},
            )
        return current, number - current.start + 1
