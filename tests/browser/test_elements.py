"""Element ids and the page state they belong to."""

from __future__ import annotations

import pytest

from meith_core import ErrorCode, ToolError
from meith_plugins_browser.elements import ElementIds


def test_element_ids_only_resolve_for_the_latest_read() -> None:
    ids = ElementIds()
    with pytest.raises(ToolError) as err:
        ids.resolve("t", "el-0")
    assert err.value.details["reason"] == "unknown"
    ids.replace(3, "first")  # el-0..el-2
    extraction, index = ids.resolve("t", "el-2")
    assert (extraction.handle, index) == ("first", 3)
    old = ids.replace(2, "second")  # el-3..el-4
    assert old is not None
    assert old.handle == "first"
    with pytest.raises(ToolError) as err:
        ids.resolve("t", "el-2")
    assert err.value.details["reason"] == "stale"
    assert ids.resolve("t", "el-4")[1] == 2
    with pytest.raises(ToolError) as err:
        ids.resolve("t", "el-5")
    assert err.value.details["reason"] == "unknown"
    ids.invalidate("the tab navigated")
    with pytest.raises(ToolError) as err:
        ids.resolve("t", "el-4")
    assert "the tab navigated" in err.value.message
    assert err.value.code is ErrorCode.TOOL_FAILED
