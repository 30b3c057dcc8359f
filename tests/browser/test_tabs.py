"""Tab records: spaces, the active tab, reactivation."""

from __future__ import annotations

import pytest

from meith_core import ToolError
from meith_plugins_browser.tabs import TabStore


def test_tab_store_spaces_and_reactivation() -> None:
    store = TabStore()
    a = store.new(object(), space_id="s", url="u", title=None, cwd=None)
    b = store.new(object(), space_id="s", url="u", title="T", cwd=None)
    c = store.new(object(), space_id="other", url="u", title=None, cwd=None)
    assert (a.active, b.active, c.active) == (False, True, True)
    assert store.active_space == "other"
    store.activate(a)
    assert store.active_in("s") is a
    store.remove(a, "gone")
    assert store.active_in("s") is b
    with pytest.raises(ToolError, match="was closed: gone"):
        store.get(a.id)
    assert b.to_dict()["title"] == "T"
