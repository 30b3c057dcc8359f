"""Argument models of the twenty browser tools (unknown keys are rejected)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from meith_core import ToolArgs

_TAB_ID = Field(min_length=1, max_length=100, description="A browser tab id (btab_...)")
_SPACE_ID = Field(None, min_length=1, max_length=200, description="A space id")
_ELEMENT_ID = Field(
    min_length=1,
    max_length=50,
    description="An element id (el-N) from the latest get_browser_state",
)
#: data: URLs may carry a whole page.
MAX_URL_CHARS = 2_000_000


class SpaceArgs(ToolArgs):
    spaceId: str | None = _SPACE_ID


class OpenTabArgs(ToolArgs):
    url: str = Field(
        min_length=1, max_length=MAX_URL_CHARS, description="http(s), data: or about:blank URL"
    )
    title: str | None = Field(
        None, max_length=1000, description="Title shown until the page has one"
    )
    spaceId: str | None = _SPACE_ID
    cwd: str | None = Field(
        None, max_length=4096, description="Project directory the tab belongs to"
    )
    detach: bool = Field(
        False,
        description="Hand the tab to the local user: left open when this session ends "
        "(otherwise a tab an agent opens is closed then)",
    )


class TabArgs(ToolArgs):
    tabId: str = _TAB_ID


class NavigateArgs(TabArgs):
    url: str = Field(
        min_length=1, max_length=MAX_URL_CHARS, description="http(s), data: or about:blank URL"
    )


class UseEndArgs(TabArgs):
    force: bool = Field(False, description="Release another owner's claim (internal callers only)")


class ElementArgs(TabArgs):
    elementId: str = _ELEMENT_ID


class TypeTextArgs(ElementArgs):
    text: str = Field(max_length=100_000, description="Replaces the field's value")


class ScrollArgs(TabArgs):
    deltaX: float | None = Field(None, description="Scroll right by this many CSS pixels")
    deltaY: float | None = Field(None, description="Scroll down by this many CSS pixels")
    toX: float | None = Field(None, description="Scroll to this x (absolute)")
    toY: float | None = Field(None, description="Scroll to this y (absolute)")


class SendKeysArgs(TabArgs):
    keys: str = Field(
        min_length=1,
        max_length=10_000,
        description=(
            "A named key (Enter, Tab, Backspace, Delete, Escape, ArrowUp/Down/Left/Right, Home, "
            "End, PageUp, PageDown), a combination such as Control+a, or literal text to type"
        ),
    )


class CdpArgs(TabArgs):
    method: str = Field(
        pattern=r"^[A-Za-z]+\.[A-Za-z]+$", max_length=200, description="e.g. Runtime.evaluate"
    )
    params: dict[str, Any] | None = Field(None, description="The method's parameters")


class LogsArgs(TabArgs):
    limit: int | None = Field(None, gt=0, description="Only the most recent entries")
