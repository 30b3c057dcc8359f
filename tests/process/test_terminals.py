"""Terminals: a real shell on a real PTY."""

from __future__ import annotations

import os
import re

import psutil
import pytest

from tests.process.conftest import Proc
from tests.process.support import descendants, eventually, gone, ok

pytestmark = pytest.mark.anyio


async def snapshot(p: Proc, tid: str, since: int | None = None) -> dict:
    args = {"terminalId": tid} if since is None else {"terminalId": tid, "sinceSeq": since}
    return ok(await p.rt.call("get_terminal_snapshot", args))


async def output_contains(p: Proc, tid: str, pattern: str, since: int | None = None) -> str:
    async def check() -> str | None:
        buf = (await snapshot(p, tid, since))["buffer"]
        return buf if re.search(pattern, buf) else None

    try:
        return await eventually(check, f"terminal output matching {pattern!r}")
    except AssertionError:
        raise AssertionError(
            f"no {pattern!r} in {(await snapshot(p, tid, since))['buffer']!r}"
        ) from None


async def test_a_real_shell_answers_echo(proc: Proc, tmp_path) -> None:
    term = ok(await proc.rt.call("create_terminal", {"cwd": str(tmp_path), "shell": "/bin/bash"}))
    assert term["id"].startswith("term_")
    assert term["status"] == "running"
    assert term["shell"] == "/bin/bash"
    assert term["cwd"] == str(tmp_path)
    assert (term["cols"], term["rows"]) == (80, 24)
    written = ok(
        await proc.rt.call(
            "write_terminal", {"terminalId": term["id"], "data": "echo answer-$((40+2))\r"}
        )
    )
    assert written == {"terminalId": term["id"], "written": len("echo answer-$((40+2))\r")}
    # The typed line is echoed as typed; only a shell that ran it prints the evaluated 42.
    await output_contains(proc, term["id"], r"answer-42")
    ok(await proc.rt.call("write_terminal", {"terminalId": term["id"], "data": "pwd; tty\r"}))
    buf = await output_contains(proc, term["id"], r"/dev/pts/\d+")
    assert str(tmp_path) in buf


async def test_the_pty_is_the_controlling_terminal_and_resize_reaches_the_shell(proc: Proc) -> None:
    tid = ok(
        await proc.rt.call("create_terminal", {"shell": "/bin/bash", "cols": 100, "rows": 30})
    )["id"]
    ok(await proc.rt.call("write_terminal", {"terminalId": tid, "data": "stty size\r"}))
    await output_contains(proc, tid, r"[\r\n]30 100\r")
    resized = ok(
        await proc.rt.call("resize_terminal", {"terminalId": tid, "cols": 132, "rows": 40})
    )
    assert (resized["cols"], resized["rows"]) == (132, 40)
    cursor = (await snapshot(proc, tid))["nextSeq"]
    # `tty -s` succeeds only with a terminal; job control (`jobs`) needs it to be controlling.
    ok(
        await proc.rt.call(
            "write_terminal",
            {"terminalId": tid, "data": "stty size; sleep 30 & jobs -l; echo ctty-$?\r"},
        )
    )
    buf = await output_contains(proc, tid, r"ctty-0", since=cursor)
    assert "40 132" in buf
    assert "no job control" not in buf


async def test_snapshot_cursor_reads_only_what_is_new(proc: Proc) -> None:
    tid = ok(await proc.rt.call("create_terminal", {"shell": "/bin/sh"}))["id"]
    ok(await proc.rt.call("write_terminal", {"terminalId": tid, "data": "echo first-$((1+1))\r"}))
    await output_contains(proc, tid, "first-2")
    snap = await snapshot(proc, tid)
    assert snap["session"]["id"] == tid
    assert snap["truncated"] is False
    cursor = snap["nextSeq"]
    assert cursor > 0
    ok(await proc.rt.call("write_terminal", {"terminalId": tid, "data": "echo second-$((2+1))\r"}))
    new = await output_contains(proc, tid, "second-3", since=cursor)
    assert "first-2" not in new
    logs = ok(await proc.rt.call("get_process_logs", {"processId": tid}))["logs"]
    assert {e["stream"] for e in logs} == {"pty"}
    assert [e["seq"] for e in logs] == list(range(len(logs)))


async def test_kill_terminal_ends_the_whole_session_including_jobs(proc: Proc) -> None:
    term = ok(await proc.rt.call("create_terminal", {"shell": "/bin/bash"}))
    tid, shell_pid = term["id"], term["pid"]
    # A background job (its own process group under job control) and a setsid'd escapee.
    ok(
        await proc.rt.call(
            "write_terminal",
            {"terminalId": tid, "data": "sleep 300 & setsid sleep 301 & echo started-$((3*3))\r"},
        )
    )
    await output_contains(proc, tid, "started-9")
    kids = await eventually(
        lambda: len(descendants(shell_pid)) >= 1 and descendants(shell_pid), "jobs"
    )
    killed = ok(await proc.rt.call("kill_terminal", {"terminalId": tid}))
    assert killed["status"] == "exited"
    assert killed["signal"] == "SIGHUP"
    assert gone(shell_pid)
    assert all(gone(pid) for pid in kids)
    # Killing it again is reported, not an error.
    again = await proc.rt.call("kill_terminal", {"terminalId": tid})
    assert again.ok
    assert "already exited" in again.diagnostics[0].message
    with pytest.raises(Exception):  # noqa: B017
        ok(await proc.rt.call("write_terminal", {"terminalId": tid, "data": "x"}))


async def test_a_shell_that_ignores_the_signal_is_killed_after_the_grace(proc: Proc) -> None:
    term = ok(await proc.rt.call("create_terminal", {"shell": "/bin/bash"}))
    # An interactive bash ignores SIGTERM: the killer must escalate to SIGKILL (after a short
    # grace here; 3 s by default).
    kill = {"terminalId": term["id"], "signal": "TERM", "graceMs": 200}
    killed = ok(await proc.rt.call("kill_terminal", kill))
    assert killed["status"] == "exited"
    assert killed["signal"] == "SIGKILL"
    assert gone(term["pid"])


async def test_close_terminal_forgets_it_and_unknown_ids_fail_clearly(proc: Proc) -> None:
    term = ok(await proc.rt.call("create_terminal", {}))
    listed = ok(await proc.rt.call("list_terminals", {}))
    assert [t["id"] for t in listed] == [term["id"]]
    assert ok(await proc.rt.call("close_terminal", {"terminalId": term["id"]})) == {
        "terminalId": term["id"],
        "closed": True,
    }
    assert gone(term["pid"])
    assert ok(await proc.rt.call("list_terminals", {})) == []
    assert ok(await proc.rt.call("close_terminal", {"terminalId": term["id"]}))["closed"] is False
    for tool, extra in [
        ("write_terminal", {"data": "x"}),
        ("resize_terminal", {"cols": 10, "rows": 10}),
        ("kill_terminal", {}),
        ("get_terminal_snapshot", {}),
    ]:
        res = await proc.rt.call(tool, {"terminalId": "term_nope", **extra})
        assert res.error.code == "TOOL_FAILED"
        assert res.error.message == "Unknown terminal: term_nope"
    res = await proc.rt.call("get_process_logs", {"processId": "term_nope"})
    assert res.error.message == "Unknown process: term_nope"


async def test_shell_resolution_and_environment(
    proc: Proc, monkeypatch: pytest.MonkeyPatch
) -> None:
    res = await proc.rt.call("create_terminal", {"shell": "/no/such/shell"})
    assert res.error.code == "VALIDATION_ERROR"
    assert "/no/such/shell" in res.error.message
    monkeypatch.setenv("SHELL", "/bin/sh")
    term = ok(await proc.rt.call("create_terminal", {"env": {"GREETING": "hi"}}))
    assert term["shell"] == "/bin/sh"
    ok(
        await proc.rt.call(
            "write_terminal",
            {"terminalId": term["id"], "data": 'echo "[$GREETING|$MEITH_PROCESS_ID|$TERM]"\r'},
        )
    )
    await output_contains(proc, term["id"], rf"\[hi\|{term['id']}\|xterm-256color\]")
    assert os.environ.get("SHELL") == "/bin/sh"


async def test_missing_cwd_falls_back_to_home_with_a_warning(proc: Proc, tmp_path) -> None:
    res = await proc.rt.call("create_terminal", {"cwd": str(tmp_path / "missing")})
    assert res.ok
    assert res.content["cwd"] == os.path.expanduser("~")
    assert "not a directory" in res.diagnostics[0].message


async def test_ctrl_c_interrupts_the_foreground_job(proc: Proc) -> None:
    tid = ok(await proc.rt.call("create_terminal", {"shell": "/bin/bash"}))["id"]
    ok(
        await proc.rt.call(
            "write_terminal", {"terminalId": tid, "data": "sleep 300; echo after-$((1+1))\r"}
        )
    )
    pid = proc.plugin.terminals.by_id[tid].pid
    await eventually(
        lambda: ["sleep", "300"] in [c.cmdline() for c in psutil.Process(pid).children()],
        "sleep to run",
    )
    ok(await proc.rt.call("write_terminal", {"terminalId": tid, "data": "\x03"}))
    # The PTY is the controlling terminal: ^C sends SIGINT to the foreground job, which ends
    # the whole command line (the `echo` does not run); the shell itself survives.
    ok(await proc.rt.call("write_terminal", {"terminalId": tid, "data": "echo alive-$((2+3))\r"}))
    buf = await output_contains(proc, tid, "alive-5")
    assert "after-2" not in buf
    assert ok(await proc.rt.call("list_terminals", {}))[0]["status"] == "running"
