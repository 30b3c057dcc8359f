"""Both permission gates apply to the privileged process tools."""

from __future__ import annotations

import pytest

from meith_core import Runtime
from meith_plugins_process.plugin import Plugin
from tests.process.conftest import Proc
from tests.process.support import ok

pytestmark = pytest.mark.anyio

PRIVILEGED = {
    "create_terminal",
    "write_terminal",
    "resize_terminal",
    "kill_terminal",
    "close_terminal",
    "start_dev_server",
    "stop_dev_server",
    "run_command",
}


async def test_declared_capabilities_and_registration_order(proc: Proc) -> None:
    tools = [t for t in proc.rt.describe() if t["plugin"] == "process"]
    assert [t["name"] for t in tools] == [
        "create_terminal", "list_terminals", "write_terminal", "resize_terminal", "kill_terminal",
        "close_terminal", "get_terminal_snapshot", "start_dev_server", "list_dev_servers",
        "stop_dev_server", "get_process_tree", "get_process_logs", "attach_process_logs",
        "wait_for_dev_server", "run_command",
    ]  # fmt: skip
    caps = {t["name"]: set(t["capabilities"]) for t in tools}
    for name in PRIVILEGED:
        assert "starts-process" in caps[name], name
    assert caps["start_dev_server"] == {"starts-process", "accesses-network"}
    assert caps["run_command"] == {"starts-process", "accesses-network"}
    assert caps["wait_for_dev_server"] == {"read-only", "accesses-network"}
    for name in set(caps) - PRIVILEGED - {"wait_for_dev_server"}:
        assert caps[name] == {"read-only"}, name
    timeouts = {t["name"]: t["timeoutMs"] for t in tools}
    assert timeouts["attach_process_logs"] is None  # streams until cancelled


async def test_unapproved_plugin_cannot_start_processes_even_for_trusted_callers(
    runtime: Runtime, tmp_path
) -> None:
    runtime.load_plugin("process", Plugin)
    res = await runtime.call("start_dev_server", {"cwd": str(tmp_path), "command": "true"})
    assert res.error.code == "PERMISSION_DENIED"
    res = await runtime.call("create_terminal", {})
    assert res.error.code == "PERMISSION_DENIED"
    assert ok(await runtime.call("list_dev_servers", {})) == []


async def test_cli_session_needs_a_grant(proc: Proc, tmp_path) -> None:
    cli = proc.rt.open_session("cli")
    res = await proc.rt.call(
        "start_dev_server", {"cwd": str(tmp_path), "command": "sleep 300"}, caller=cli
    )
    assert res.error.code == "PERMISSION_DENIED"
    res = await proc.rt.call("create_terminal", {}, caller=cli)
    assert res.error.code == "PERMISSION_DENIED"
    # Read-only tools need no grant.
    assert ok(await proc.rt.call("get_process_tree", {}, caller=cli)) == {"processes": []}
    proc.rt.grant(cli, ["starts-process", "accesses-network"], tool="start_dev_server")
    dev = ok(
        await proc.rt.call(
            "start_dev_server", {"cwd": str(tmp_path), "command": "sleep 300"}, caller=cli
        )
    )
    # The grant was for start_dev_server only.
    res = await proc.rt.call("stop_dev_server", {"devServerId": dev["id"]}, caller=cli)
    assert res.error.code == "PERMISSION_DENIED"


async def test_a_grant_limited_to_a_directory_limits_where_processes_start(
    proc: Proc, tmp_path
) -> None:
    inside, outside = tmp_path / "project", tmp_path / "other"
    inside.mkdir()
    outside.mkdir()
    # The grant is matched against the directory the call names, not where the caller sits.
    cli = proc.rt.open_session("cli", cwd=str(inside))
    proc.rt.grant(cli, ["starts-process", "accesses-network"], cwd_prefix=str(inside))
    res = await proc.rt.call(
        "start_dev_server", {"cwd": str(outside), "command": "true"}, caller=cli
    )
    assert res.error.code == "PERMISSION_DENIED"
    assert res.error.details["gate"] == "caller"
    res = await proc.rt.call("create_terminal", {"cwd": str(outside)}, caller=cli)
    assert res.error.code == "PERMISSION_DENIED"
    ok(await proc.rt.call("start_dev_server", {"cwd": str(inside), "command": "true"}, caller=cli))
