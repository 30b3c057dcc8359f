"""The `ToolResult` envelope on the wire."""

from __future__ import annotations

from meith_core import ToolResult


def test_tool_result_to_wire_omits_absent_fields() -> None:
    assert ToolResult(ok=True).to_wire() == {"ok": True}
    assert ToolResult(ok=True, content=0).to_wire() == {"ok": True, "content": 0}
