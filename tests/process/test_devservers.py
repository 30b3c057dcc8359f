"""Dev servers on real processes: ports, logs, stop, errors, the shell rule, readiness."""

from __future__ import annotations

import psutil
import pytest

from tests.process.conftest import Proc
from tests.process.support import PY, descendants, eventually, gone, has_log, logs, ok, start

pytestmark = pytest.mark.anyio

HTTP_SERVER = [PY, "-m", "http.server", "0", "--bind", "127.0.0.1"]


async def record(p: Proc, dev_id: str) -> dict:
    return next(s for s in ok(await p.rt.call("list_dev_servers", {})) if s["id"] == dev_id)


async def test_a_real_http_server_is_started_its_port_detected_and_awaited(
    proc: Proc, tmp_path
) -> None:
    dev = await start(proc, tmp_path, HTTP_SERVER[0], HTTP_SERVER[1:], name="static")
    assert dev["id"].startswith("dev_")
    assert dev["status"] == "running"
    assert dev["name"] == "static"
    assert dev["args"] == HTTP_SERVER[1:]
    assert dev["cwd"] == str(tmp_path)
    events: list[dict] = []
    ready = await proc.rt.call(
        "wait_for_dev_server", {"devServerId": dev["id"]}, on_event=events.append
    )
    server = ok(ready)
    port = server["port"]
    assert isinstance(port, int)
    assert port > 0
    assert any(
        e["kind"] == "progress" and f"port {port} accepts connections" in e.get("message", "")
        for e in events
    )
    # The announced port is the one the process really listens on.
    listening = {
        c.laddr.port
        for c in psutil.Process(dev["pid"]).net_connections("tcp")
        if c.status == "LISTEN"
    }
    assert listening == {port}
    # Readiness by URL too; the server logs the probe's request on stderr.
    url = f"http://127.0.0.1:{port}/"
    ok(
        await proc.rt.call(
            "wait_for_dev_server", {"devServerId": dev["id"], "url": url, "timeoutMs": 20000}
        )
    )
    entries = await has_log(proc, dev["id"], '"GET / HTTP/1.1" 200')
    assert entries[0]["stream"] == "stdout"
    assert f"port {port}" in entries[0]["text"]
    assert any(e["stream"] == "stderr" for e in entries)
    assert [e["seq"] for e in entries] == list(range(len(entries)))
    tree = ok(await proc.rt.call("get_process_tree", {}))["processes"]
    mine = next(t for t in tree if t["id"] == dev["id"])
    assert mine["kind"] == "dev-server"
    assert mine["ports"] == [port]
    assert mine["tree"]["pid"] == dev["pid"]
    assert mine["tree"]["ports"] == [port]
    assert "http.server" in mine["tree"]["command"]


async def test_port_comes_from_the_listening_socket_when_nothing_is_printed(
    proc: Proc, tmp_path
) -> None:
    code = "import socket,time; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); time.sleep(300)"
    dev = await start(proc, tmp_path, PY, ["-c", code])
    server = ok(
        await proc.rt.call("wait_for_dev_server", {"devServerId": dev["id"], "timeoutMs": 20000})
    )
    listening = {
        c.laddr.port
        for c in psutil.Process(dev["pid"]).net_connections("tcp")
        if c.status == "LISTEN"
    }
    assert {server["port"]} == listening
    assert (await record(proc, dev["id"]))["port"] == server["port"]


async def test_stop_ends_the_process_group_and_descendants_that_left_it(
    proc: Proc, tmp_path
) -> None:
    dev = await start(proc, tmp_path, "sleep 300 & setsid sleep 301 & echo spawned; wait")
    await has_log(proc, dev["id"], "spawned")
    kids = await eventually(
        lambda: len(descendants(dev["pid"])) >= 2 and descendants(dev["pid"]), "children"
    )
    res = await proc.rt.call("stop_dev_server", {"devServerId": dev["id"]})
    assert ok(res) == {"devServerId": dev["id"], "stopped": True}
    assert gone(dev["pid"])
    assert all(gone(k) for k in kids)
    after = await record(proc, dev["id"])
    assert after["status"] == "stopped"
    assert after["signal"] == "SIGTERM"
    assert after["exitCode"] is None
    texts = [e["text"] for e in await logs(proc, dev["id"])]
    assert "stopping (SIGTERM)" in texts
    await eventually(
        lambda: any(t.startswith("exited with code null (signal SIGTERM)") for t in texts) or None,
        "exit line",
    )
    # Stopping again is reported, not an error.
    again = await proc.rt.call("stop_dev_server", {"devServerId": dev["id"]})
    assert again.ok
    assert again.content["stopped"] is False
    assert "not running" in again.diagnostics[0].message


async def test_stop_escalates_to_sigkill_when_sigterm_is_ignored(proc: Proc, tmp_path) -> None:
    code = "import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('armed'); time.sleep(300)"
    dev = await start(proc, tmp_path, PY, ["-c", code])
    ok(
        await proc.rt.call(
            "wait_for_dev_server", {"devServerId": dev["id"], "logPattern": "^armed$"}
        )
    )
    # A short grace: the escalation is the same whatever its length (3 s by default).
    stop = {"devServerId": dev["id"], "graceMs": 200}
    assert ok(await proc.rt.call("stop_dev_server", stop))["stopped"] is True
    assert gone(dev["pid"])
    after = await record(proc, dev["id"])
    assert after["status"] == "stopped"
    assert after["signal"] == "SIGKILL"


async def test_stop_with_another_signal(proc: Proc, tmp_path) -> None:
    code = "import signal,sys,time; signal.signal(signal.SIGINT, lambda *a: sys.exit(5)); print('armed'); time.sleep(300)"
    dev = await start(proc, tmp_path, PY, ["-c", code])
    ok(await proc.rt.call("wait_for_dev_server", {"devServerId": dev["id"], "logPattern": "armed"}))
    assert ok(
        await proc.rt.call("stop_dev_server", {"devServerId": dev["id"], "signal": "SIGINT"})
    )["stopped"]
    after = await record(proc, dev["id"])
    assert (after["status"], after["exitCode"], after["signal"]) == ("stopped", 5, None)
    res = await proc.rt.call("stop_dev_server", {"devServerId": dev["id"], "signal": "SIGNOPE"})
    assert res.error.code == "VALIDATION_ERROR"
    res = await proc.rt.call("stop_dev_server", {"devServerId": dev["id"], "graceMs": -1})
    assert res.error.code == "VALIDATION_ERROR"


async def test_exit_code_streams_and_system_line(proc: Proc, tmp_path) -> None:
    dev = await start(proc, tmp_path, "echo out; echo err >&2; printf 'no newline'; exit 3")
    entries = await has_log(proc, dev["id"], "exited with code 3")
    by_stream = {(e["stream"], e["text"]) for e in entries}
    assert {
        ("stdout", "out"),
        ("stderr", "err"),
        ("stdout", "no newline"),
        ("system", "exited with code 3"),
    } <= by_stream
    assert entries[-1]["stream"] == "system"
    assert [e["seq"] for e in entries] == list(range(len(entries)))
    assert all(isinstance(e["ts"], int) for e in entries)
    after = await record(proc, dev["id"])
    assert (after["status"], after["exitCode"], after["signal"]) == ("exited", 3, None)
    limited = ok(await proc.rt.call("get_process_logs", {"processId": dev["id"], "limit": 1}))[
        "logs"
    ]
    assert limited == [entries[-1]]


async def test_a_command_that_does_not_exist_is_errored_not_hung(proc: Proc, tmp_path) -> None:
    via_shell = await start(proc, tmp_path, "no-such-command-meith --flag")
    entries = await has_log(proc, via_shell["id"], "command not found")
    assert entries[-1] == {
        **entries[-1],
        "stream": "system",
        "text": "exited with code 127: command not found",
    }
    assert (await record(proc, via_shell["id"]))["status"] == "errored"
    res = await proc.rt.call(
        "start_dev_server",
        {"cwd": str(tmp_path), "command": "no-such-command-meith", "args": ["x"]},
    )
    assert res.ok
    assert res.content["status"] == "errored"
    assert res.content["pid"] is None
    assert "failed to spawn" in res.diagnostics[0].message
    spawn_log = (await logs(proc, res.content["id"]))[0]
    assert spawn_log["stream"] == "system"
    assert spawn_log["text"].startswith("failed to spawn: ")
    res = await proc.rt.call("start_dev_server", {"cwd": str(tmp_path / "nope"), "command": "true"})
    assert res.error.code == "VALIDATION_ERROR"


async def test_command_with_args_runs_without_a_shell(proc: Proc, tmp_path) -> None:
    literal = "$HOME; echo injected"
    dev = await start(proc, tmp_path, "printf", ["[%s]\\n", literal])
    entries = await has_log(proc, dev["id"], "exited with code 0")
    assert entries[0]["text"] == f"[{literal}]"
    assert not any(e["text"] == "injected" for e in entries)
    shell = await start(proc, tmp_path, "echo $((6*7)) && echo second")
    entries = await has_log(proc, shell["id"], "exited with code 0")
    assert [e["text"] for e in entries[:2]] == ["42", "second"]


async def test_command_as_a_list_runs_without_a_shell_like_run_command(
    proc: Proc, tmp_path
) -> None:
    literal = "$HOME; echo injected"
    dev = await start(proc, tmp_path, ["printf", "[%s]\\n"], [literal])
    assert (dev["command"], dev["args"]) == ("printf", ["[%s]\\n", literal])
    entries = await has_log(proc, dev["id"], "exited with code 0")
    assert entries[0]["text"] == f"[{literal}]"
    alone = await start(proc, tmp_path, ["true"])
    await has_log(proc, alone["id"], "exited with code 0")


async def test_a_duplicate_start_returns_the_running_server(proc: Proc, tmp_path) -> None:
    first = await start(proc, tmp_path, "sleep 300")
    res = await proc.rt.call("start_dev_server", {"cwd": str(tmp_path), "command": "sleep 300"})
    assert res.ok
    assert res.content["id"] == first["id"]
    assert res.diagnostics
    assert "already running" in res.diagnostics[0].message
    assert len(ok(await proc.rt.call("list_dev_servers", {}))) == 1
    ok(await proc.rt.call("stop_dev_server", {"devServerId": first["id"]}))
    third = await start(proc, tmp_path, "sleep 300")
    assert third["id"] != first["id"]


async def test_children_get_the_runtime_environment(proc: Proc, tmp_path) -> None:
    dev = await start(
        proc,
        tmp_path,
        'echo "home=$MEITH_HOME id=$MEITH_PROCESS_ID sock=${MEITH_SOCKET:-none} x=$EXTRA"',
        env={"EXTRA": "yes"},
    )
    entries = await has_log(proc, dev["id"], "home=")
    assert entries[0]["text"] == f"home={proc.rt.home.root} id={dev['id']} sock=none x=yes"


async def test_unknown_ids_fail_with_the_original_messages(proc: Proc) -> None:
    for tool, args in [
        ("stop_dev_server", {"devServerId": "dev_nope"}),
        ("wait_for_dev_server", {"devServerId": "dev_nope"}),
        ("attach_process_logs", {"devServerId": "dev_nope"}),
    ]:
        res = await proc.rt.call(tool, args)
        assert (res.error.code, res.error.message) == (
            "TOOL_FAILED",
            "Unknown dev server: dev_nope",
        )
    res = await proc.rt.call("get_process_logs", {"processId": "dev_nope"})
    assert (res.error.code, res.error.message) == ("TOOL_FAILED", "Unknown process: dev_nope")


async def test_wait_fails_clearly_when_the_server_exits_first(proc: Proc, tmp_path) -> None:
    dev = await start(proc, tmp_path, "echo booting; sleep 0.3; echo crashed >&2; exit 4")
    res = await proc.rt.call("wait_for_dev_server", {"devServerId": dev["id"], "timeoutMs": 20000})
    assert res.error.code == "TOOL_FAILED"
    assert "exited (exit code 4) before it was ready" in res.error.message
    assert res.error.details["devServer"]["status"] == "exited"
    assert "crashed" in [e["text"] for e in res.error.details["logs"]]


async def test_wait_fails_clearly_at_its_deadline(proc: Proc, tmp_path) -> None:
    dev = await start(proc, tmp_path, "echo starting; sleep 300")
    events: list[dict] = []
    res = await proc.rt.call(
        "wait_for_dev_server",
        {"devServerId": dev["id"], "logPattern": "compiled", "timeoutMs": 300},
        on_event=events.append,
    )
    assert res.error.code == "TIMEOUT"
    assert "not ready after 300 ms" in res.error.message
    assert "/compiled/" in res.error.message
    assert events
    assert events[0]["kind"] == "progress"


async def test_wait_for_a_log_line(proc: Proc, tmp_path) -> None:
    dev = await start(proc, tmp_path, "sleep 0.3; echo 'compiled successfully in 12ms'; sleep 300")
    server = ok(
        await proc.rt.call(
            "wait_for_dev_server", {"devServerId": dev["id"], "logPattern": r"compiled \w+"}
        )
    )
    assert server["id"] == dev["id"]
    assert server["status"] == "running"
