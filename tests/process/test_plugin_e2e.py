"""End to end: a real `meith serve`, driven by the real `meith call` and `meith devlogs`."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.harness import MEITH
from tests.process.support import PY, gone, signal_pending

pytestmark = pytest.mark.slow

DEADLINE_S = 30.0


def poll(check: Any, what: str, deadline_s: float = DEADLINE_S) -> Any:
    end = time.monotonic() + deadline_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def content(envelope: dict[str, Any]) -> Any:
    assert envelope["ok"], envelope
    return envelope["content"]


def serve(meith_server: Any, **kwargs: Any) -> Any:
    srv = meith_server(plugins="process", **kwargs)
    srv.approve("process")
    srv.grant("starts-process")
    return srv


def tree_pids(srv: Any) -> list[int]:
    pids: list[int] = []
    stack = [p["tree"] for p in content(srv.call("get_process_tree"))["processes"] if p["tree"]]
    while stack:
        node = stack.pop()
        pids.append(node["pid"])
        stack.extend(node["children"])
    return pids


class Devlogs:
    """`meith devlogs` as a user runs it, its output read as it arrives."""

    def __init__(self, srv: Any, *args: str) -> None:
        self.path = Path(srv.home.root) / f"devlogs-{time.monotonic_ns()}.out"
        self._out = open(self.path, "wb")  # noqa: SIM115 - closed in finish()
        self.proc = subprocess.Popen(
            [MEITH, "devlogs", *args], env=srv.cli_env, stdout=self._out, stderr=subprocess.PIPE
        )

    @property
    def lines(self) -> list[str]:
        return self.path.read_text(errors="replace").splitlines()

    def wait_for(self, text: str) -> list[str]:
        return poll(
            lambda: any(text in line for line in self.lines) and self.lines,
            f"devlogs line {text!r}",
        )

    def finish(self, sig: int | None = signal.SIGINT) -> int:
        if sig is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
        code = self.proc.wait(timeout=DEADLINE_S)
        self._out.close()
        return code


def test_privileged_tools_are_denied_without_approval_and_grant(
    meith_server: Any, tmp_path: Path
) -> None:
    srv = meith_server(plugins="process")
    args = {"cwd": str(tmp_path), "command": "sleep 300"}
    denied = srv.call("start_dev_server", args)
    assert denied["error"]["code"] == "PERMISSION_DENIED"
    assert srv.last.returncode != 0
    srv.approve("process")
    denied = srv.call("create_terminal", {})
    assert denied["error"]["code"] == "PERMISSION_DENIED"
    assert "grant" in denied["error"]["message"]
    # Read-only tools need neither.
    assert content(srv.call("list_dev_servers")) == []
    srv.grant("starts-process", tool="start_dev_server")
    dev = content(srv.call("start_dev_server", args))
    assert dev["status"] == "running"
    assert (
        srv.call("stop_dev_server", {"devServerId": dev["id"]})["error"]["code"]
        == "PERMISSION_DENIED"
    )


def test_a_real_shell_in_a_real_pty_answers_and_can_call_meith_back(
    meith_server: Any, tmp_path: Path
) -> None:
    srv = serve(meith_server)
    term = content(
        srv.call(
            "create_terminal",
            {"cwd": str(tmp_path), "shell": "/bin/bash", "env": {"HOME": str(tmp_path)}},
        )
    )
    assert term["id"].startswith("term_")
    written = content(
        srv.call("write_terminal", {"terminalId": term["id"], "data": "echo answer-$((40+2))\r"})
    )
    assert written["written"] == len("echo answer-$((40+2))\r")

    def buffer() -> str:
        return content(srv.call("get_terminal_snapshot", {"terminalId": term["id"]}))["buffer"]

    poll(lambda: "answer-42" in buffer(), "the shell's answer")
    # The child has MEITH_SOCKET/MEITH_HOME: it can call the runtime back through the CLI.
    command = (
        f'"$MEITH_CLI_BIN" call list_terminals --json > {tmp_path / "back.json"}; echo called-$?\r'
    )
    content(srv.call("write_terminal", {"terminalId": term["id"], "data": command}))
    poll(lambda: "called-0" in buffer(), "the call back")
    back = json.loads((tmp_path / "back.json").read_text())
    assert [t["id"] for t in back["content"]] == [term["id"]]
    killed = content(srv.call("kill_terminal", {"terminalId": term["id"]}))
    assert killed["status"] == "exited"
    assert gone(term["pid"])
    assert content(srv.call("close_terminal", {"terminalId": term["id"]})) == {
        "terminalId": term["id"],
        "closed": True,
    }


def test_a_real_http_server_started_awaited_streamed_and_stopped(
    meith_server: Any, tmp_path: Path
) -> None:
    srv = serve(meith_server)
    dev = content(
        srv.call(
            "start_dev_server",
            {
                "cwd": str(tmp_path),
                "command": PY,
                "args": ["-m", "http.server", "0", "--bind", "127.0.0.1"],
            },
        )
    )
    ready = content(srv.call("wait_for_dev_server", {"devServerId": dev["id"], "timeoutMs": 20000}))
    port = ready["port"]
    assert isinstance(port, int)
    assert content(srv.call("list_dev_servers"))[0]["port"] == port
    assert port in content(srv.call("get_process_tree"))["processes"][0]["ports"]

    logs = Devlogs(srv, "--id", dev["id"])
    logs.wait_for(f"port {port}")  # the replayed announcement: attached
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/") as answer:
        assert answer.status == 200
    lines = logs.wait_for('"GET / HTTP/1.1" 200')
    assert any(line.startswith("[stderr] ") and '"GET / HTTP/1.1" 200' in line for line in lines)
    assert logs.finish(signal.SIGINT) == 0  # Ctrl-C is how a log stream ends

    # By directory, and the stop is streamed to a second attached client.
    by_cwd = Devlogs(srv, "--cwd", str(tmp_path))
    by_cwd.wait_for(f"port {port}")
    stopped = content(srv.call("stop_dev_server", {"devServerId": dev["id"]}))
    assert stopped == {"devServerId": dev["id"], "stopped": True}
    by_cwd.wait_for("[system] exited with code null (signal SIGTERM)")
    assert by_cwd.finish() == 0
    assert gone(dev["pid"])
    again = srv.call("stop_dev_server", {"devServerId": dev["id"]})
    assert again["content"]["stopped"] is False
    unknown = srv.call("get_process_logs", {"processId": "dev_nope"})
    assert unknown["error"] == {"code": "TOOL_FAILED", "message": "Unknown process: dev_nope"}


def test_sigterm_of_meith_serve_leaves_no_orphans_and_ends_attached_streams(
    meith_server: Any, tmp_path: Path
) -> None:
    srv = serve(meith_server)
    dev = content(
        srv.call(
            "start_dev_server",
            {"cwd": str(tmp_path), "command": "sleep 300 & setsid sleep 301 & echo up; wait"},
        )
    )
    stubborn = content(
        srv.call(
            "start_dev_server",
            {"cwd": str(tmp_path), "command": "trap '' TERM; sleep 302 & echo armed; wait"},
        )
    )
    term = content(
        srv.call("create_terminal", {"shell": "/bin/sh", "env": {"HOME": str(tmp_path)}})
    )
    content(srv.call("write_terminal", {"terminalId": term["id"], "data": "sleep 303 &\r"}))
    logs = Devlogs(srv, "--id", stubborn["id"])
    logs.wait_for("armed")
    pids = poll(lambda: len(found := tree_pids(srv)) >= 7 and found, "every process")
    assert {dev["pid"], stubborn["pid"], term["pid"]} <= set(pids)
    assert srv.stop(signal.SIGTERM) == 0
    assert [pid for pid in pids if not gone(pid)] == []
    # The attached `meith devlogs` ended with the runtime instead of hanging.
    assert logs.finish(sig=None) in (0, 1)


def test_sigkill_of_meith_serve_then_restart_ends_the_survivors(
    meith_server: Any, tmp_path: Path
) -> None:
    srv = serve(meith_server)
    content(
        srv.call(
            "start_dev_server",
            {"cwd": str(tmp_path), "command": "sleep 300 & sleep 301 & echo up; wait"},
        )
    )
    pids = poll(lambda: len(found := tree_pids(srv)) >= 3 and found, "the server and its children")
    home = Path(srv.home.root)
    srv.stop(signal.SIGKILL)  # returns once the runtime is reaped
    # Without a shutdown nobody ended them, nor is about to: these really are survivors.
    assert [pid for pid in pids if gone(pid) or signal_pending(pid)] == []
    assert list((home / "state" / "process").glob("*.json"))

    again = meith_server(home=home, plugins="process")
    assert [pid for pid in pids if not gone(pid)] == []
    assert list((home / "state" / "process").glob("*.json")) == []
    logged = (home / "logs.jsonl").read_text()
    assert "left running" in logged or "did not shut down" in logged
    assert content(again.call("list_dev_servers")) == []
    assert sys.platform.startswith("linux") or sys.platform == "darwin"


def test_a_client_that_reads_slowly_holds_the_dev_server_back_and_loses_nothing(
    meith_server: Any, tmp_path: Path
) -> None:
    # 300,000 lines are ~35 MB of event frames. A client not reading for a moment would, without
    # flow control, make the runtime queue them until its 16 MiB outbound bound disconnected it.
    lines = 300_000
    trigger = tmp_path / "go"
    code = (
        "import os,sys,time\n"
        "print('ready', flush=True)\n"
        f"while not os.path.exists({str(trigger)!r}): time.sleep(0.01)\n"
        f"for s in range(0, {lines}, 1000):\n"
        "    sys.stdout.write(''.join(f'line {i:07d}\\n' for i in range(s, s + 1000)))\n"
        "print('END', flush=True)\n"
        "time.sleep(300)\n"
    )
    srv = serve(meith_server)
    dev = content(
        srv.call("start_dev_server", {"cwd": str(tmp_path), "command": PY, "args": ["-c", code]})
    )
    client = subprocess.Popen(
        [MEITH, "devlogs", "--id", dev["id"], "--quiet"], env=srv.cli_env, stdout=subprocess.PIPE
    )
    assert client.stdout is not None
    try:
        assert client.stdout.readline() == b"ready\n"
        trigger.touch()
        # The client reads nothing now. The runtime stops reading the dev server's output: the
        # newest line it has stops advancing, well before the end.
        last = [-1, 0]

        def held() -> bool:
            logs = content(srv.call("get_process_logs", {"processId": dev["id"], "limit": 1}))[
                "logs"
            ]
            assert logs[-1]["text"] != "END", "the whole burst was queued for a client not reading"
            seq = logs[-1]["seq"]
            last[1] = last[1] + 1 if seq == last[0] else 0
            last[0] = seq
            return last[1] >= 2

        poll(held, "the dev server's output to be held", deadline_s=4.0)
        expected = 0
        for raw in client.stdout:
            if raw == b"END\n":
                break
            assert int(raw[5:12]) == expected, raw[:40]
            expected += 1
        assert expected == lines
    finally:
        client.terminate()
        client.wait(timeout=DEADLINE_S)
