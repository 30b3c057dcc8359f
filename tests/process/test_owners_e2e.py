"""Ownership over a real `meith serve`: a second connection claiming `plugin` cannot read or
act on what a `cli` connection started."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from meith_core.client import Client
from tests.harness import wait_until

pytestmark = pytest.mark.slow


def test_a_plugin_peer_cannot_read_or_touch_a_cli_sessions_processes(
    meith_server: Any, tmp_path: Path
) -> None:
    srv = meith_server(plugins="process")
    srv.approve("process")
    srv.grant("starts-process")
    with (
        Client(srv.socket, caller="cli", cwd=str(tmp_path)) as a,
        Client(srv.socket, caller="plugin", cwd=str(tmp_path)) as b,
    ):
        term = a.call("create_terminal", {"cwd": str(tmp_path)})
        assert term.ok, term
        tid = term.content["id"]
        assert a.call("write_terminal", {"terminalId": tid, "data": "export PW=hunter2\r"}).ok

        def owner_sees_it() -> bool:
            snap = a.call("get_terminal_snapshot", {"terminalId": tid})
            return bool(snap.ok and "hunter2" in snap.content["buffer"])

        assert wait_until(owner_sees_it)
        dev = a.call("start_dev_server", {"cwd": str(tmp_path), "command": "sleep 300"})
        assert dev.ok, dev
        did = dev.content["id"]

        for name, args in [
            ("get_terminal_snapshot", {"terminalId": tid}),
            ("get_process_logs", {"processId": tid}),
            ("get_process_logs", {"processId": did}),
            ("write_terminal", {"terminalId": tid, "data": "touch x\r"}),
            ("stop_dev_server", {"devServerId": did, "signal": "SIGKILL"}),
            ("attach_process_logs", {"devServerId": did}),
        ]:
            res = b.call(name, args)
            assert res.error is not None, (name, res)
            assert res.error.code == "PERMISSION_DENIED", (name, res)
        assert b.call("list_terminals").content == []
        assert b.call("list_dev_servers").content == []
        assert b.call("get_process_tree").content == {"processes": []}
        # The connection survives; the owner still has both.
        assert [t["id"] for t in a.call("list_terminals").content] == [tid]
        assert [s["status"] for s in a.call("list_dev_servers").content] == ["running"]
        assert a.call("stop_dev_server", {"devServerId": did}).ok
        assert a.call("close_terminal", {"terminalId": tid}).ok


def test_one_agent_session_cannot_type_into_read_or_kill_anothers(
    meith_server: Any, tmp_path: Path
) -> None:
    srv = meith_server(plugins="process")
    srv.approve("process")
    srv.grant("starts-process", caller="agent")  # each agent session gets it
    srv.grant("starts-process")  # and the local user
    with (
        Client(srv.socket, caller="agent", label="a", cwd=str(tmp_path)) as a,
        Client(srv.socket, caller="agent", label="b", cwd=str(tmp_path)) as b,
    ):
        term = a.call("create_terminal", {"cwd": str(tmp_path)})
        assert term.ok, term
        tid = term.content["id"]
        assert a.call("write_terminal", {"terminalId": tid, "data": "export PW=hunter2\r"}).ok
        show_env = "echo env:${MEITH_SESSION_TOKEN:+token}:${MEITH_HOME:-no}"
        dev = a.call(
            "start_dev_server", {"cwd": str(tmp_path), "command": f"{show_env}; sleep 300"}
        )
        assert dev.ok, dev
        did = dev.content["id"]

        def env_line() -> list[str]:
            logs = a.call("get_process_logs", {"processId": did}).content["logs"]
            return [e["text"] for e in logs if e["text"].startswith("env:")]

        # What an agent starts cannot call back into the runtime as the local user: it gets
        # no way to the trust root, only its session's token (it calls back as session a).
        assert wait_until(env_line)
        assert env_line() == ["env:token:no"]
        pwned = tmp_path / "pwned"
        for name, args in [
            ("write_terminal", {"terminalId": tid, "data": f"touch {pwned}\r"}),
            ("get_terminal_snapshot", {"terminalId": tid}),
            ("resize_terminal", {"terminalId": tid, "cols": 10, "rows": 5}),
            ("stop_dev_server", {"devServerId": did, "signal": "SIGKILL"}),
            ("get_process_logs", {"processId": did}),
        ]:
            res = b.call(name, args)
            assert res.error is not None, (name, res)
            assert res.error.code == "PERMISSION_DENIED", (name, res)
        assert b.call("list_terminals").content == []
        assert b.call("list_dev_servers").content == []
        assert [s["status"] for s in a.call("list_dev_servers").content] == ["running"]
        # The local user sees and may end both.
        assert {p["id"] for p in srv.call("get_process_tree")["content"]["processes"]} == {
            tid,
            did,
        }
        assert srv.call("stop_dev_server", {"devServerId": did})["ok"]
        assert a.call("close_terminal", {"terminalId": tid}).ok
        assert not pwned.exists()
