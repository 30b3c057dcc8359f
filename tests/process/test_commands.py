"""run_command on real processes: exit codes, signals, timeout, cancellation, the output cap,
stdin, env, both forms, streamed log events, and a real `meith serve`."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from meith_core import CancelToken
from meith_core.mcp.tools import annotations_for
from meith_plugins_process.models import RUN_TIMEOUT_MAX_MS
from meith_plugins_process.render import render_result
from tests.harness import MEITH, wait_until
from tests.process.conftest import Proc
from tests.process.support import (
    PY,
    TWO_SLEEPS,
    descendants,
    eventually,
    gone,
    marker,
    ok,
    serve,
    the_running_command,
)

pytestmark = pytest.mark.anyio


async def run(p: Proc, tmp_path: Path, **args: Any) -> dict[str, Any]:
    return ok(await p.rt.call("run_command", {"cwd": str(tmp_path), **args}))


# -- exit status ----------------------------------------------------------------------------


async def test_exit_codes_are_reported(proc: Proc, tmp_path: Path) -> None:
    assert (await run(proc, tmp_path, command=["true"]))["exitCode"] == 0
    assert (await run(proc, tmp_path, command=["false"]))["exitCode"] == 1
    res = await run(proc, tmp_path, shell="echo out; echo err >&2; exit 3")
    assert res == {
        "exitCode": 3,
        "signal": None,
        "timedOut": False,
        "stdout": "out\n",
        "stderr": "err\n",
        "truncated": False,
        "durationMs": res["durationMs"],
        "confinedTo": None,
    }
    assert isinstance(res["durationMs"], int)
    assert res["durationMs"] >= 0


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGKILL"])
async def test_a_command_killed_by_a_signal_reports_the_signal(
    proc: Proc, tmp_path: Path, sig: str
) -> None:
    code = f"import os, signal; os.kill(os.getpid(), signal.{sig})"
    res = await run(proc, tmp_path, command=[PY, "-c", code])
    assert (res["exitCode"], res["signal"], res["timedOut"]) == (None, sig, False)


async def test_a_program_that_does_not_exist_fails_clearly(proc: Proc, tmp_path: Path) -> None:
    res = await proc.rt.call("run_command", {"cwd": str(tmp_path), "command": ["no-such-xyz"]})
    assert res.error.code == "TOOL_FAILED"
    assert "command not found: no-such-xyz" in res.error.message
    # Through the shell it is the shell's answer, as in a terminal.
    shell = await run(proc, tmp_path, shell="no-such-xyz")
    assert shell["exitCode"] == 127
    assert "not found" in shell["stderr"]


# -- the two forms --------------------------------------------------------------------------


async def test_the_shell_form_runs_through_sh(proc: Proc, tmp_path: Path) -> None:
    res = await run(proc, tmp_path, shell="echo a b c | wc -w; echo $((40 + 2))")
    # `command` as a string is a command line, as start_dev_server takes it.
    line = await run(proc, tmp_path, command="echo a b c | wc -w; echo $((40 + 2))")
    assert line["stdout"] == res["stdout"]
    assert res["stdout"].split() == ["3", "42"]


async def test_the_argv_form_passes_arguments_as_is(proc: Proc, tmp_path: Path) -> None:
    res = await run(proc, tmp_path, command=["echo", "$HOME", "*", "a;b"])
    assert res["stdout"] == "$HOME * a;b\n"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ({"command": ["true"], "shell": "true"}, "both were given"),
        ({"command": "true", "shell": "true"}, "both were given"),
        ({}, "neither was given"),
    ],
)
async def test_exactly_one_of_command_and_shell(
    proc: Proc, tmp_path: Path, args: dict[str, Any], said: str
) -> None:
    res = await proc.rt.call("run_command", {"cwd": str(tmp_path), **args})
    assert res.error.code == "VALIDATION_ERROR"
    assert "exactly one of command" in res.error.message
    assert said in res.error.message
    assert proc.plugin.commands.targets() == []


async def test_an_empty_program_is_a_validation_error(proc: Proc, tmp_path: Path) -> None:
    for args in ({"command": []}, {"command": [""]}, {"command": ""}, {"shell": ""}):
        res = await proc.rt.call("run_command", {"cwd": str(tmp_path), **args})
        assert res.error.code == "VALIDATION_ERROR", args


# -- input and environment ------------------------------------------------------------------


async def test_stdin_is_written_to_the_command(proc: Proc, tmp_path: Path) -> None:
    assert (await run(proc, tmp_path, command=["cat"], stdin="line 1\nline 2\n"))[
        "stdout"
    ] == "line 1\nline 2\n"
    # More than a pipe holds: written as the command reads it.
    big = "x" * (3 * 1024 * 1024)
    code = "import sys; print(len(sys.stdin.read()))"
    assert (await run(proc, tmp_path, command=[PY, "-c", code], stdin=big))["stdout"] == (
        f"{len(big)}\n"
    )
    # Without stdin it reads end-of-file at once (not the runtime's terminal).
    assert (await run(proc, tmp_path, command=["cat"]))["stdout"] == ""


async def test_env_is_added_to_the_child_environment(proc: Proc, tmp_path: Path) -> None:
    res = await run(
        proc,
        tmp_path,
        shell='printf "%s|%s|%s" "$GREETING" "$MEITH_PROCESS_ID" "$PWD"',
        env={"GREETING": "hello there"},
    )
    greeting, marker_id, cwd = res["stdout"].split("|")
    assert greeting == "hello there"
    # The killer's marker, as every managed process has.
    assert marker_id.startswith("run_")
    assert cwd == str(tmp_path)


async def test_the_cwd_must_be_a_directory(proc: Proc, tmp_path: Path) -> None:
    res = await proc.rt.call("run_command", {"cwd": str(tmp_path / "missing"), "command": ["true"]})
    assert res.error.code == "VALIDATION_ERROR"


# -- the output cap -------------------------------------------------------------------------


async def test_output_beyond_the_cap_keeps_head_and_tail_with_the_elided_count(
    proc: Proc, tmp_path: Path
) -> None:
    code = (
        "import sys\n"
        "sys.stdout.write('A' * 1000 + 'B' * 5000 + 'C' * 1000)\n"
        "sys.stderr.write('e' * 300)\n"
    )
    res = await run(proc, tmp_path, command=[PY, "-c", code], maxOutputBytes=2000)
    assert res["truncated"] is True
    assert res["stdout"] == "A" * 1000 + marker(5000) + "C" * 1000
    # Each stream has its own cap: stderr fit.
    assert res["stderr"] == "e" * 300
    under = await run(proc, tmp_path, command=[PY, "-c", code], maxOutputBytes=7000)
    assert under["truncated"] is False
    assert under["stdout"] == "A" * 1000 + "B" * 5000 + "C" * 1000


async def test_the_cap_never_cuts_a_character_in_two(proc: Proc, tmp_path: Path) -> None:
    code = "import sys; sys.stdout.write('\u00e9' * 1000)"  # 2,000 bytes of UTF-8
    res = await run(proc, tmp_path, command=[PY, "-c", code], maxOutputBytes=101)
    # Head: 50 bytes (25 characters); tail: 51 bytes, whose first byte ends a character.
    assert res["stdout"] == "\u00e9" * 25 + marker(2000 - 50 - 50) + "\u00e9" * 25


# -- streaming ------------------------------------------------------------------------------


async def test_output_streams_as_log_events_while_it_runs(proc: Proc, tmp_path: Path) -> None:
    trigger = tmp_path / "go"
    script = (
        f"echo first; echo warned >&2; while [ ! -e {trigger} ]; do sleep 0.02; done; echo last"
    )
    events: list[dict[str, Any]] = []
    answer: dict[str, Any] = {}

    async def call() -> None:
        answer["res"] = await proc.rt.call(
            "run_command", {"cwd": str(tmp_path), "shell": script}, on_event=events.append
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        logs = await eventually(
            lambda: [e for e in events if e["kind"] == "log"][:2] or None, "the first lines"
        )
        # Received while the command still waits for the trigger.
        assert "res" not in answer
        trigger.touch()
    logs = [e for e in events if e["kind"] == "log"]
    assert logs == [
        {"kind": "log", "level": "info", "message": "first"},
        {"kind": "log", "level": "warn", "message": "[stderr] warned"},
        {"kind": "log", "level": "info", "message": "last"},
    ]
    assert ok(answer["res"])["stdout"] == "first\nlast\n"


class CongestedSink:
    """A caller that never catches up (what the socket server's sink says of a slow reader)."""

    congested = True

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    async def wait_flowing(self) -> None:
        await anyio.sleep_forever()

    def __call__(self, event: dict[str, Any]) -> None:
        self.events.append(event)


async def test_a_caller_that_falls_behind_is_told_what_it_missed(
    proc: Proc, tmp_path: Path
) -> None:
    sink = CongestedSink()
    res = ok(
        await proc.rt.call(
            "run_command",
            {"cwd": str(tmp_path), "command": [PY, "-c", "for i in range(1000): print(i)"]},
            on_event=sink,
        )
    )
    # Nothing waited for the caller: the command ran, and the answer has all of its output.
    assert res["stdout"] == "".join(f"{i}\n" for i in range(1000))
    logs = [e for e in sink.events if e["kind"] == "log"]
    assert logs == [
        {
            "kind": "log",
            "level": "warn",
            "message": "[system] skipped 1000 lines: this client fell behind "
            "(the result still has the output)",
        }
    ]


# -- nothing left behind --------------------------------------------------------------------


@pytest.mark.slow
async def test_at_its_timeout_the_whole_process_group_is_ended(proc: Proc, tmp_path: Path) -> None:
    answer: dict[str, Any] = {}

    async def call() -> None:
        answer["res"] = await proc.rt.call(
            "run_command", {"cwd": str(tmp_path), "shell": TWO_SLEEPS, "timeoutMs": 2000}
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        leader, children = await the_running_command(proc)
    res = ok(answer["res"])
    assert res["timedOut"] is True
    assert (res["exitCode"], res["signal"]) == (None, "SIGTERM")
    assert [d.message for d in answer["res"].diagnostics or []] == [
        "Timed out after 2000 ms: its processes were ended (SIGTERM, then SIGKILL)"
    ]
    for pid in [leader, *children]:
        assert gone(pid), psutil.Process(pid)
    assert proc.plugin.commands.targets() == []


@pytest.mark.slow
async def test_a_command_that_ignores_sigterm_is_killed_at_its_timeout(
    proc: Proc, tmp_path: Path
) -> None:
    res = await run(proc, tmp_path, shell="trap '' TERM; sleep 100 & wait", timeoutMs=300)
    assert res["timedOut"] is True
    assert res["signal"] == "SIGKILL"


def two_sleeps(proc: Proc, tmp_path: Path, answer: dict[str, Any], **call: Any) -> Any:
    """A run_command of TWO_SLEEPS (`call`: the call's own keywords) whose result lands in
    `answer["res"]`: start it in a task group, act once `the_running_command` finds it."""

    async def run_it() -> None:
        answer["res"] = await proc.rt.call(
            "run_command", {"cwd": str(tmp_path), "shell": TWO_SLEEPS}, **call
        )

    return run_it


async def test_cancelling_the_call_ends_the_whole_process_group(proc: Proc, tmp_path: Path) -> None:
    cancel = CancelToken()
    answer: dict[str, Any] = {}
    async with anyio.create_task_group() as tg:
        tg.start_soon(two_sleeps(proc, tmp_path, answer, cancel=cancel))
        leader, children = await the_running_command(proc)
        cancel.cancel()
    assert answer["res"].error.code == "CANCELLED"
    await eventually(lambda: all(gone(p) for p in [leader, *children]), "the processes to go")
    await eventually(lambda: proc.plugin.commands.targets() == [], "the command to be forgotten")


async def test_a_command_is_the_sessions_and_ends_with_it(proc: Proc, tmp_path: Path) -> None:
    """Issue 22: what a session started stops when it ends, run_command's children included.
    A call still running when its session is closed (in process, where no connection closes
    with it) is answered at once: its processes were ended, and it says why. While it runs,
    the session's objects (`meith sessions` OWNS) list it."""
    agent = proc.rt.open_session("agent", cwd=str(tmp_path))
    proc.rt.grant(agent, ["starts-process"])
    answer: dict[str, Any] = {}
    async with anyio.create_task_group() as tg:
        tg.start_soon(two_sleeps(proc, tmp_path, answer, caller=agent))
        leader, children = await the_running_command(proc)
        (row,) = [r for r in proc.rt.list_sessions() if r["sessionId"] == agent.session_id]
        assert [(o["kind"], o["summary"]) for o in row["owns"]] == [
            ("command", f"running {TWO_SLEEPS}"),
        ]
        await proc.rt.close_session(agent)
    res = answer["res"]
    assert res.ok is True, res.error
    assert res.content["signal"] == "SIGTERM"
    assert any("session ended" in d.message for d in res.diagnostics or [])
    await eventually(lambda: all(gone(p) for p in [leader, *children]), "the processes to go")


@pytest.mark.slow
async def test_a_shorter_call_deadline_ends_the_command_too(proc: Proc, tmp_path: Path) -> None:
    answer: dict[str, Any] = {}

    async def call() -> None:
        # The call's own deadline, before the command's timeoutMs (120 s by default).
        answer["res"] = await proc.rt.call(
            "run_command", {"cwd": str(tmp_path), "shell": TWO_SLEEPS}, timeout_ms=2000
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        leader, children = await the_running_command(proc)
    assert answer["res"].error.code == "TIMEOUT"
    await eventually(lambda: all(gone(p) for p in [leader, *children]), "the processes to go")
    await eventually(lambda: proc.plugin.commands.targets() == [], "the command to be forgotten")


async def test_what_a_command_leaves_running_is_ended_when_it_exits(
    proc: Proc, tmp_path: Path
) -> None:
    result = await proc.rt.call(
        "run_command", {"cwd": str(tmp_path), "shell": "sleep 100 > /dev/null & echo $!"}
    )
    res = ok(result)
    assert res["exitCode"] == 0
    assert gone(int(res["stdout"]))
    assert [d.message for d in result.diagnostics or []] == [
        "Ended 1 process(es) the command left running after it exited"
    ]


async def test_runtime_shutdown_ends_a_running_command(proc: Proc, tmp_path: Path) -> None:
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_quietly, proc, tmp_path)
        leader, children = await the_running_command(proc)
        await proc.rt.aclose()
    for pid in [leader, *children]:
        assert gone(pid)


async def run_quietly(p: Proc, tmp_path: Path) -> None:
    await p.rt.call("run_command", {"cwd": str(tmp_path), "shell": TWO_SLEEPS})


# -- the contract ---------------------------------------------------------------------------


async def test_descriptor_annotations_and_deadline(proc: Proc) -> None:
    [tool] = [t for t in proc.rt.describe() if t["name"] == "run_command"]
    assert set(tool["capabilities"]) == {"starts-process", "accesses-network"}
    hints = annotations_for(tool)
    assert hints.read_only_hint is False
    assert hints.idempotent_hint is False
    assert hints.open_world_hint is True
    # A command may remove anything its grant reaches: the hint says so (effect 'acts').
    assert hints.destructive_hint is True
    # The call's deadline never cuts a command off before its own timeoutMs does.
    assert tool["timeoutMs"] > RUN_TIMEOUT_MAX_MS
    schema = tool["inputSchema"]["properties"]
    assert schema["timeoutMs"]["default"] == 120_000
    assert schema["timeoutMs"]["maximum"] == RUN_TIMEOUT_MAX_MS == 30 * 60 * 1000
    assert schema["maxOutputBytes"]["default"] == schema["maxOutputBytes"]["maximum"] == 1024 * 1024


async def test_the_text_for_a_model_is_the_exit_line_then_the_output(
    proc: Proc, tmp_path: Path
) -> None:
    result = await proc.rt.call(
        "run_command", {"cwd": str(tmp_path), "shell": "echo one; echo two; echo bad >&2; exit 1"}
    )
    took = result.content["durationMs"]
    took_text = f"{took} ms" if took < 1000 else f"{took / 1000:.1f} s"
    assert result.text == f"exit 1 in {took_text}\n--- stdout\none\ntwo\n--- stderr\nbad"


async def test_a_grant_limited_to_a_directory_limits_where_commands_run(
    proc: Proc, tmp_path: Path
) -> None:
    inside, outside = tmp_path / "project", tmp_path / "other"
    inside.mkdir()
    outside.mkdir()
    cli = proc.rt.open_session("cli", cwd=str(inside))
    args = {"command": ["true"]}
    res = await proc.rt.call("run_command", {"cwd": str(outside), **args}, caller=cli)
    assert res.error.code == "PERMISSION_DENIED"
    proc.rt.grant(cli, ["starts-process"], cwd_prefix=str(inside))
    res = await proc.rt.call("run_command", {"cwd": str(outside), **args}, caller=cli)
    assert res.error.code == "PERMISSION_DENIED"
    ok(await proc.rt.call("run_command", {"cwd": str(inside), **args}, caller=cli))


def test_meith_call_run_command_through_a_real_runtime(meith_server: Any, tmp_path: Path) -> None:
    srv = serve(meith_server)
    envelope = srv.call(
        "run_command",
        {
            "shell": 'echo "to stdout"; echo "to stderr" >&2; "$MEITH_CLI_BIN" call list_terminals'
            " --json > called.json; exit 4"
        },
        cwd=str(tmp_path),
    )
    assert envelope["ok"], envelope
    res = envelope["content"]
    assert (res["exitCode"], res["stdout"], res["stderr"]) == (4, "to stdout\n", "to stderr\n")
    # Run in the caller's directory, with the child environment that lets it call back.
    assert json.loads((tmp_path / "called.json").read_text())["ok"] is True
    # Streamed: `meith call --verbose` prints the log events as they arrive.
    shown = srv.cli(
        "call", "run_command", "--shell", "echo streamed; echo oops >&2", "--verbose",
        cwd=str(tmp_path),
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "[info] streamed" in shown.stderr
    assert "[warn] [stderr] oops" in shown.stderr
    # Input and output are in the call and its answer, never in the audit trail.
    typed = srv.call("run_command", {"command": ["cat"], "stdin": "typed-in-secret"})
    assert typed["content"]["stdout"] == "typed-in-secret"
    records = [r for r in srv.audit_records() if r["toolName"] == "run_command"]
    assert len(records) == 3
    assert "typed-in-secret" not in json.dumps(records)
    # The command line is recorded (it is what ran); what it printed is not.
    assert "echo streamed" in json.dumps(records[1]["argsSummary"])
    results = json.dumps([r["resultSummary"] for r in records])
    assert "to stdout" not in results
    assert "streamed" not in results
    assert "REDACTED_TEXT" in json.dumps(records[-1]["argsSummary"])


def test_ctrl_c_on_meith_call_ends_the_command_and_its_children(
    meith_server: Any, tmp_path: Path
) -> None:
    srv = serve(meith_server)
    pidfile = tmp_path / "leader"
    script = f"echo $$ > {pidfile}; {TWO_SLEEPS}"
    call = subprocess.Popen(
        [MEITH, "call", "run_command", "--shell", script],
        env=srv.cli_env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert wait_until(lambda: pidfile.exists() and pidfile.read_text().strip())
        leader = int(pidfile.read_text())
        assert wait_until(lambda: descendants(leader))
        pids = [leader, *descendants(leader)]
        call.send_signal(signal.SIGINT)
        call.wait(timeout=30)
        end = time.monotonic() + 30
        while not all(gone(p) for p in pids) and time.monotonic() < end:
            time.sleep(0.05)
        assert all(gone(p) for p in pids), [p for p in pids if not gone(p)]
    finally:
        if call.poll() is None:
            call.kill()
        call.communicate()
    [record] = [r for r in srv.audit_records() if r["toolName"] == "run_command"]
    assert record["decision"] == "allow"
    assert "CANCELLED" in json.dumps(record["resultSummary"])


def test_after_a_sigkill_of_meith_serve_the_next_runtime_ends_a_running_command(
    meith_server: Any, tmp_path: Path
) -> None:
    srv = serve(meith_server)
    pidfile = tmp_path / "leader"
    call = subprocess.Popen(
        [MEITH, "call", "run_command", "--shell", f"echo $$ > {pidfile}; {TWO_SLEEPS}"],
        env=srv.cli_env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    home = Path(srv.home.root)
    try:
        assert wait_until(lambda: pidfile.exists() and pidfile.read_text().strip())
        leader = int(pidfile.read_text())
        assert wait_until(lambda: descendants(leader))
        pids = [leader, *descendants(leader)]
        # In the crash record once it has run for a moment (the record itself, not the
        # temporary file it is written to before the rename).
        records = home / "state" / "process"
        assert wait_until(lambda: any("run_" in p.read_text() for p in records.glob("*.json")))
        srv.stop(signal.SIGKILL)
        assert [pid for pid in pids if gone(pid)] == []  # nobody ended them: survivors
        meith_server(home=home, plugins="process")
        assert [pid for pid in pids if not gone(pid)] == []
        assert list(records.glob("*.json")) == []
    finally:
        call.kill()
        call.wait()


def test_an_agent_sessions_command_calls_back_as_that_session(
    meith_server: Any, tmp_path: Path
) -> None:
    from meith_core.client import Client

    srv = serve(meith_server, caller="agent")
    with Client(srv.socket, caller="agent", label="a", cwd=str(tmp_path)) as agent:
        agent.hello()
        res = agent.call(
            "run_command",
            {"shell": 'printf "%s|%s|%s" "${MEITH_HOME:-none}" "$MEITH_SOCKET" '
             '"$MEITH_SESSION_TOKEN"'},
        )  # fmt: skip
        assert res.ok, res
        home, socket, token = res.content["stdout"].split("|")
    assert home == "none"  # no way to the trust root
    assert socket == srv.socket + ".child"
    assert token.startswith("mst_")


async def test_through_meith_mcp_an_agent_sees_the_lines_and_gets_the_result(
    meith_server: Any, tmp_path: Path
) -> None:
    import mcp_types as types

    from tests.mcp.conftest import stdio_client

    srv = serve(meith_server, caller="agent")
    logs: list[str] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(str(params.data))

    async with stdio_client(
        srv, "--cwd", str(tmp_path), "--structured", logging_callback=on_log, log_level="info"
    ) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        result = await client.call_tool(
            "run_command", {"shell": "echo from-mcp; echo to-stderr >&2; pwd; exit 2"}
        )
    hints = tools["run_command"].annotations
    assert hints is not None
    assert (hints.read_only_hint, hints.idempotent_hint, hints.open_world_hint) == (
        False,
        False,
        True,
    )
    assert result.is_error is False
    content = result.structured_content
    assert content is not None
    assert (content["exitCode"], content["stdout"]) == (2, f"from-mcp\n{tmp_path}\n")
    assert content["stderr"] == "to-stderr\n"
    # The text a model reads is the rendered one, not the JSON of the structured result.
    [text] = [b.text for b in result.content if isinstance(b, types.TextContent)]
    assert text == render_result(content)
    assert text.startswith("exit 2 in ")
    # Lines read together travel in one log message.
    lines = "\n".join(logs).split("\n")
    assert sorted(lines) == sorted(["from-mcp", str(tmp_path), "[stderr] to-stderr"])
