"""Tool descriptors to MCP tools: annotations from capabilities, idempotence, and which tools are
offered."""

from __future__ import annotations

import pytest

from meith_core.mcp.profiles import Selection
from meith_core.mcp.tools import annotations_for, offered, to_mcp_tool, why_hidden
from tests.core.mcp.support import desc


@pytest.mark.parametrize(
    ("caps", "expected"),
    [
        (["read-only"], (True, False, False)),
        (["read-only", "accesses-network"], (False, False, True)),
        # A privileged tool that declares no effect may do anything: destructive.
        (["controls-browser"], (False, True, True)),
        (["writes-files", "destructive"], (False, True, False)),
        (["starts-process"], (False, True, False)),
        ([], (False, False, False)),
    ],
)
def test_annotations_come_from_capabilities(caps: list[str], expected: tuple[bool, ...]) -> None:
    a = annotations_for(desc("any_name_read_only", *caps))
    assert (a.read_only_hint, a.destructive_hint, a.open_world_hint) == expected
    assert a.idempotent_hint is False


def test_idempotent_comes_from_the_descriptor_and_tool_shape() -> None:
    tool = to_mcp_tool(
        desc("t", "read-only", idempotent=True, outputSchema={"type": "array", "items": {}})
    )
    assert tool.annotations is not None
    assert tool.annotations.idempotent_hint is True
    # Not an object schema: carried wrapped, as the structured content of such a result is.
    assert tool.output_schema == {
        "type": "object",
        "properties": {"result": {"type": "array", "items": {}}},
        "required": ["result"],
    }
    assert "Capabilities: read-only." in (tool.description or "")
    with_output = to_mcp_tool(desc("u", "read-only", outputSchema={"type": "object"}))
    assert with_output.output_schema == {"type": "object"}


def test_selection_and_approval_decide_what_is_offered() -> None:
    tools = [
        desc("z_read", "read-only", plugin="git"),
        desc("a_write", "writes-files", plugin="git", approved=False),
        desc("b_write", "writes-files", plugin="git", approved=True),
        desc("core_write", "writes-files", plugin="core"),
        desc("other", "read-only", plugin="process"),
        desc("bad name!", "read-only"),
    ]
    assert list(offered(tools, Selection())) == ["b_write", "core_write", "other", "z_read"]
    assert list(offered(tools, Selection.parse("git", None, False))) == ["b_write", "z_read"]
    assert list(offered(tools, Selection.parse(None, "z_*, oth*", False))) == ["other", "z_read"]
    assert list(offered(tools, Selection.parse(None, "all", True))) == ["other", "z_read"]
    hidden = why_hidden(tools[1], Selection())
    assert hidden is not None
    assert "meith plugins approve git" in hidden


def test_tool_profiles_select_the_tools_of_one_kind_of_work() -> None:
    names = {
        "workspace_read_file": "files",
        "workspace_apply_patch": "files",
        "run_command": "process",
        "start_dev_server": "process",
        "git_status": "git",
        "git_blame": "git",
        "navigate": "browser",
        "third_party": "extra",
    }
    tools = [desc(n, "read-only", plugin=p) for n, p in names.items()]
    default = Selection.parse(None, None, False)
    assert list(offered(tools, default)) == [
        "git_status",
        "run_command",
        "workspace_apply_patch",
        "workspace_read_file",
    ]
    assert "git_blame" in offered(tools, Selection.parse(None, "coding,git", False))
    browser = offered(tools, Selection.parse(None, "browser", False))
    assert list(browser) == ["navigate", "start_dev_server"]
    assert len(offered(tools, Selection.parse(None, "all", False))) == len(tools)
    # A profile and a glob together; --plugins alone offers all of those plugins' tools.
    mixed = Selection.parse(None, "coding,third_*", False)
    assert "third_party" in offered(tools, mixed)
    assert list(offered(tools, Selection.parse("git", None, False))) == ["git_blame", "git_status"]
    hidden = why_hidden(desc("git_blame", "read-only", plugin="git"), default)
    assert hidden == (
        '"git_blame" is not among the tools this bridge offers (--tools coding); the user can '
        "widen it: meith mcp --tools coding,git (or --tools all)"
    )
