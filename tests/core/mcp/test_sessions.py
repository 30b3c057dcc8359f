"""Which link serves a request: the labels an MCP client's name becomes."""

from __future__ import annotations

from meith_core.mcp.sessions import label_of


def test_labels_are_sanitised() -> None:
    assert label_of("Claude Code") == "Claude Code"
    assert label_of("evil\n\x1b[31mname") == "evil[31mname"
    assert label_of("") == "mcp-client"
    assert len(label_of("x" * 500)) == 128
