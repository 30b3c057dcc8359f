"""The browser tools' results written for a model to read (`@tool(render=...)`)."""

from __future__ import annotations

from typing import Any


def state_text(state: dict[str, Any]) -> str:
    """The tab, page and scroll position on one line, then the page snapshot (an outline of its
    visible text and controls with their el-N references)."""
    scroll = state.get("scroll") or {}
    head = (
        f"tab {state.get('tabId')}: {state.get('title') or '(untitled)'} <{state.get('url')}>"
        f" scroll {scroll.get('x', 0)},{scroll.get('y', 0)}"
    )
    lines = [head, state.get("snapshot") or "(empty page)"]
    if state.get("snapshotTruncated"):
        lines.append("(snapshot truncated; scroll and read again for the rest)")
    if state.get("truncated"):
        lines.append("(more interactive elements than listed)")
    return "\n".join(lines)
