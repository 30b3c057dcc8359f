"""Process trees of managed processes: terminals and dev servers with their children."""

from __future__ import annotations

import os

import pytest

from tests.process.conftest import Proc
from tests.process.support import descendants, eventually, ok, start

pytestmark = pytest.mark.anyio


async def test_get_process_tree_lists_terminals_and_servers_with_children(
    proc: Proc, tmp_path
) -> None:
    dev = await start(proc, tmp_path, "sleep 300 & sleep 301 & wait")
    term = ok(await proc.rt.call("create_terminal", {"shell": "/bin/sh"}))
    await eventually(lambda: len(descendants(dev["pid"])) >= 2, "children")
    tree = ok(await proc.rt.call("get_process_tree", {}))["processes"]
    by_id = {t["id"]: t for t in tree}
    assert by_id[term["id"]]["kind"] == "terminal"
    assert by_id[term["id"]]["tree"]["pid"] == term["pid"]
    node = by_id[dev["id"]]["tree"]
    assert node["pid"] == dev["pid"]
    assert node["ppid"] == os.getpid()
    assert sorted(c["command"] for c in node["children"]) == ["sleep 300", "sleep 301"]
    assert all(c["ppid"] == dev["pid"] for c in node["children"])
    ok(await proc.rt.call("stop_dev_server", {"devServerId": dev["id"]}))
    tree = ok(await proc.rt.call("get_process_tree", {}))["processes"]
    assert next(t for t in tree if t["id"] == dev["id"])["tree"] is None
