"""A tool's `render`: the result written for a model to read, beside the machine form."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from meith_core import ToolArgs, ToolContext, hookimpl, tool
from meith_core.testing import MeithHarness


class Args(ToolArgs):
    n: int = 2


def _lines(content: Any) -> str:
    return "\n".join(f"item {i}" for i in content["items"])


@tool(capabilities=["read-only"], render=_lines)
def listing(ctx: ToolContext, args: Args) -> dict[str, Any]:
    """List n items."""
    return {"items": list(range(args.n))}


def _broken(content: Any) -> str:
    raise RuntimeError("renderer bug")


@tool(capabilities=["read-only"], render=_broken)
def badly_rendered(ctx: ToolContext, args: Args) -> dict[str, Any]:
    """A tool whose renderer fails."""
    return {"n": args.n}


@tool(capabilities=["read-only"])
def unrendered(ctx: ToolContext, args: Args) -> dict[str, Any]:
    """A tool without a renderer."""
    return {"n": args.n}


class Plugin:
    @hookimpl
    def meith_tools(self) -> list[Any]:
        return [listing, badly_rendered, unrendered]


def _harness(tmp_path: Path) -> MeithHarness:
    return MeithHarness(tmp_path / "home", "render", plugin=Plugin())


def test_a_rendered_tool_returns_its_text_beside_the_content(tmp_path: Path) -> None:
    with _harness(tmp_path) as meith:
        result = meith.call("listing", {"n": 3})
    assert result.ok
    assert result.content == {"items": [0, 1, 2]}
    assert result.text == "item 0\nitem 1\nitem 2"
    assert result.to_wire()["text"] == result.text


def test_a_failing_renderer_costs_the_text_not_the_call(tmp_path: Path) -> None:
    with _harness(tmp_path) as meith:
        result = meith.call("badly_rendered", {"n": 1})
    assert result.ok
    assert result.content == {"n": 1}
    assert result.text is None


def test_a_tool_without_a_renderer_has_no_text_on_the_wire(tmp_path: Path) -> None:
    with _harness(tmp_path) as meith:
        result = meith.call("unrendered", {})
    assert result.ok
    assert "text" not in result.to_wire()


def test_the_audit_summary_keeps_the_text_out(tmp_path: Path) -> None:
    with _harness(tmp_path) as meith:
        meith.call("listing", {"n": 50})
        (record,) = meith.audit("listing")
    assert "item 49" not in record["resultSummary"]
