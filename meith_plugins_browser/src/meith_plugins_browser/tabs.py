"""Tab records: ids, spaces, which tab is active, who owns it, and why a tab went away."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import anyio

from meith_core import ErrorCode, ToolError, new_id
from meith_plugins_browser.elements import ElementIds, Extraction
from meith_plugins_browser.logs import ConsoleLog, NetworkLog, now_ms

DEFAULT_SPACE: Final = "default"
#: How many closed tab ids keep their reason (after that: "Unknown browser tab").
MAX_CLOSED_REMEMBERED: Final = 1000

LoadState = Literal["loading", "ready", "error"]


@dataclass(eq=False)
class Tab:
    id: str
    space_id: str
    page: Any  # playwright Page
    url: str
    title: str
    created_at: int
    cwd: str | None = None
    given_title: str | None = None
    active: bool = False
    owner_id: str | None = None
    #: The session that opened it (agents and plugins): the tab closes when that session
    #: ends, unless it was opened with `detach` (then it is left open, unclaimed, as it is).
    opened_by: str | None = None
    detached: bool = False
    load_state: LoadState = "loading"
    error: str | None = None
    console: ConsoleLog = field(default_factory=ConsoleLog)
    network: NetworkLog = field(default_factory=NetworkLog)
    #: Element ids per reader (owner id): one session's read never makes another's ids stale.
    readers: dict[str, ElementIds] = field(default_factory=dict)
    #: Playwright CDPSessions per owner id, each created by that owner's first cdp_command:
    #: what one session set over CDP goes away when its own CDP session is detached.
    cdp: dict[str, Any] = field(default_factory=dict)
    #: Counts main-frame navigations, so an extraction that raced one is dropped.
    nav_seq: int = 0
    #: Serialises what reads or moves the page of this tab (navigation, extraction, input).
    lock: anyio.Lock = field(default_factory=anyio.Lock)

    def element_ids(self, reader: str) -> ElementIds:
        ids = self.readers.get(reader)
        if ids is None:
            ids = self.readers[reader] = ElementIds()
        return ids

    def invalidate_elements(self, reason: str) -> None:
        """The document changed: every reader's ids are stale (the handles died with it)."""
        for ids in self.readers.values():
            ids.invalidate(reason)

    def forget_reader(self, reader: str) -> Extraction | None:
        """Drop a reader's ids; returns its live extraction, whose handle the caller disposes."""
        ids = self.readers.pop(reader, None)
        return ids.current if ids is not None else None

    def to_dict(self, *, private: bool = False) -> dict[str, Any]:
        """The BrowserTab record; `private`: as seen by a caller who may not read the tab
        (where it is and what it shows are left out)."""
        if private:
            return {
                "id": self.id,
                "spaceId": self.space_id,
                "url": None,
                "title": None,
                "active": self.active,
                "loadState": self.load_state,
                "ownerId": self.owner_id,
                "mode": "web",
                "createdAt": self.created_at,
            }
        out: dict[str, Any] = {
            "id": self.id,
            "spaceId": self.space_id,
            "url": self.url,
            "title": self.title or self.given_title or self.url,
            "active": self.active,
            "loadState": self.load_state,
            "ownerId": self.owner_id,
            "mode": "web",
            "createdAt": self.created_at,
        }
        if self.cwd:
            out["cwd"] = self.cwd
        if self.detached:
            out["detached"] = True
        if self.error:
            out["error"] = self.error
        return out


class TabStore:
    def __init__(self) -> None:
        self._tabs: dict[str, Tab] = {}
        self._closed: OrderedDict[str, str] = OrderedDict()
        #: The space of the tab opened or focused last: "the active space".
        self.active_space = DEFAULT_SPACE

    def __len__(self) -> int:
        return len(self._tabs)

    def __iter__(self) -> Iterator[Tab]:
        return iter(list(self._tabs.values()))

    def new(self, page: Any, *, space_id: str, url: str, title: str | None, cwd: str | None) -> Tab:
        tab = Tab(
            id=new_id("btab"),
            space_id=space_id,
            page=page,
            url=url,
            title="",
            given_title=title,
            created_at=now_ms(),
            cwd=cwd,
        )
        self._tabs[tab.id] = tab
        self.activate(tab)
        return tab

    def get(self, tab_id: str) -> Tab:
        tab = self._tabs.get(tab_id)
        if tab is not None:
            return tab
        reason = self._closed.get(tab_id)
        if reason is not None:
            raise ToolError(
                ErrorCode.TOOL_FAILED,
                f"Browser tab {tab_id} was closed: {reason}",
                {"tabId": tab_id, "closed": True, "reason": reason},
            )
        raise ToolError(ErrorCode.TOOL_FAILED, f"Unknown browser tab: {tab_id}", {"tabId": tab_id})

    def find(self, tab_id: str) -> Tab | None:
        return self._tabs.get(tab_id)

    def by_page(self, page: Any) -> Tab | None:
        for tab in self._tabs.values():
            if tab.page is page:
                return tab
        return None

    def in_space(self, space_id: str | None) -> list[Tab]:
        return [t for t in self._tabs.values() if space_id is None or t.space_id == space_id]

    def active_in(self, space_id: str) -> Tab | None:
        for tab in self._tabs.values():
            if tab.space_id == space_id and tab.active:
                return tab
        return None

    def activate(self, tab: Tab) -> None:
        for other in self._tabs.values():
            if other.space_id == tab.space_id:
                other.active = other is tab
        self.active_space = tab.space_id

    def remove(self, tab: Tab, reason: str | None = None) -> None:
        """Forget a tab; the last remaining tab of its space becomes active if it was.

        With a reason, later references to its id say why it went away.
        """
        if self._tabs.pop(tab.id, None) is None:
            return
        if reason is not None:
            self._closed[tab.id] = reason
            while len(self._closed) > MAX_CLOSED_REMEMBERED:
                self._closed.popitem(last=False)
        if tab.active:
            rest = self.in_space(tab.space_id)
            if rest:
                self.activate(rest[-1])

    def relabel(self, tab_id: str, old: str, new: str) -> bool:
        """Change why a closed tab went away, if it went away for `old`."""
        if self._closed.get(tab_id) != old:
            return False
        self._closed[tab_id] = new
        return True
