"""What the plugin declares: its six tools, capabilities that tell the truth (and so MCP hints),
and self-contained input schemas."""

from __future__ import annotations

import pytest

from meith_core.mcp.tools import annotations_for
from meith_core.testing import MeithHarness

pytestmark = pytest.mark.meith_plugin("files")

EXPECTED = {
    "workspace_read_file": (["read-only"], True),
    "workspace_write_file": (["writes-files"], True),
    "workspace_apply_patch": (["writes-files"], False),
    "workspace_undo": (["writes-files"], False),
    "workspace_list_files": (["read-only"], True),
    "workspace_search": (["read-only"], True),
}


def test_the_plugin_loads_from_its_entry_point_with_six_tools(meith: MeithHarness) -> None:
    assert meith.record.distribution == "meith-plugins-files"
    mine = {n: d for n, d in meith.tools().items() if d["plugin"] == "files"}
    assert set(mine) == set(EXPECTED)


def test_capabilities_and_idempotence_are_declared_truthfully(meith: MeithHarness) -> None:
    tools = meith.tools()
    for name, (caps, idempotent) in EXPECTED.items():
        assert tools[name]["capabilities"] == caps, name
        assert tools[name]["idempotent"] is idempotent, name


def test_mcp_hints_read_tools_read_only_undo_and_patch_not_idempotent(
    meith: MeithHarness,
) -> None:
    tools = meith.tools()
    hints = {name: annotations_for(tools[name]) for name in EXPECTED}
    assert {n for n, h in hints.items() if h.read_only_hint} == {
        "workspace_read_file",
        "workspace_list_files",
        "workspace_search",
    }
    assert hints["workspace_undo"].idempotent_hint is False
    assert hints["workspace_apply_patch"].idempotent_hint is False
    assert not any(h.open_world_hint for h in hints.values())


def test_input_schemas_are_self_contained(meith: MeithHarness) -> None:
    for name in EXPECTED:
        assert "$ref" not in repr(meith.tools()[name]["inputSchema"]), name
