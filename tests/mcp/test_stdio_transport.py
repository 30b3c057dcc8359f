"""The bridge's stdio transport, spoken to in raw JSON-RPC lines by a real `meith mcp`.

On pipes (what MCP clients give a server) the bridge reads and writes from the event loop
(`meith_core.mcp.stdio`); on anything else the SDK's own transport serves. Both must behave
the same: hostile lines answered, not fatal; the stream stays pure JSON-RPC.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.harness import MEITH

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw-lines", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _call(i: int, text: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": i,
        "method": "tools/call",
        "params": {"name": "mcptest_echo", "arguments": {"value": text}},
    }


def _lines(*messages: dict[str, Any] | bytes) -> bytes:
    return b"".join(m if isinstance(m, bytes) else json.dumps(m).encode() + b"\n" for m in messages)


def _responses(out: bytes) -> dict[Any, dict[str, Any]]:
    """Every stdout line must be a JSON-RPC message; responses by id."""
    by_id: dict[Any, dict[str, Any]] = {}
    for line in out.splitlines():
        message = json.loads(line)  # a stray byte on stdout fails here
        assert message.get("jsonrpc") == "2.0", line
        if "id" in message:
            by_id[message["id"]] = message
    return by_id


def _echoed(response: dict[str, Any]) -> Any:
    """The value `mcptest_echo` answered with: its text is its content as JSON."""
    return json.loads(response["result"]["content"][0]["text"])["value"]


def _converse(srv: Any, data: bytes, wait_for: set[Any]) -> tuple[int, bytes]:
    """Write `data` to a `meith mcp` on pipes, read stdout until every id in `wait_for` was
    answered (stdin stays open meanwhile: at EOF the SDK fails what is still in flight), then
    close stdin and wait for the exit."""
    proc = subprocess.Popen(
        [MEITH, "mcp", "--no-start", "--tools", "mcptest_*"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=srv.cli_env,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        proc.stdin.write(data)
        proc.stdin.flush()
        out = b""
        pending = set(wait_for)
        while pending:
            line = proc.stdout.readline()  # the test's timeout bounds a bridge that never answers
            assert line, f"stdout ended with {pending} unanswered"
            out += line
            pending.discard(json.loads(line).get("id"))
        proc.stdin.close()
        out += proc.stdout.read()
        return proc.wait(timeout=30), out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _run(srv: Any, stdin: Any, stdout: Any) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [MEITH, "mcp", "--no-start", "--tools", "mcptest_*"],
        stdin=stdin,
        stdout=stdout,
        stderr=subprocess.PIPE,
        env=srv.cli_env,
        timeout=60,
        check=False,
    )


def test_pipes_answer_calls_and_survive_garbage_lines(agent_server: Any) -> None:
    srv = agent_server()
    srv.approve("mcptest")
    data = _lines(
        INIT,
        INITIALIZED,
        _call(2, "first"),
        b"this is not json\n",
        b"\n",
        b'{"jsonrpc": "2.0", "id": 3, "method": \n',  # cut short
        _call(4, "after the garbage"),
    )
    code, out = _converse(srv, data, {1, 2, 4})
    assert code == 0
    responses = _responses(out)
    assert responses[1]["result"]["serverInfo"]["name"]
    assert _echoed(responses[2]) == "first"
    assert _echoed(responses[4]) == "after the garbage"
    assert 3 not in responses  # a line that never parsed has no id to answer


def test_files_are_served_by_the_sdk_transport(agent_server: Any, tmp_path: Path) -> None:
    """stdin and stdout redirected to regular files (not pipes): the fallback transport."""
    srv = agent_server()
    srv.approve("mcptest")
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(_lines(INIT, INITIALIZED, _call(2, "from a file")))
    answers = tmp_path / "answers.jsonl"
    with requests.open("rb") as stdin, answers.open("wb") as stdout:
        done = _run(srv, stdin, stdout)
    assert done.returncode == 0, done.stderr.decode()
    responses = _responses(answers.read_bytes())
    assert responses[1]["result"]["serverInfo"]["name"]
    # The file ends at once, and at EOF the SDK fails what is in flight: the call is answered,
    # by its result or by that error, never dropped.
    assert "result" in responses[2] or responses[2]["error"]["message"] == "Connection closed"


def test_many_calls_in_one_burst_each_answered_once(agent_server: Any) -> None:
    srv = agent_server()
    srv.approve("mcptest")
    calls = [_call(100 + i, f"n{i}") for i in range(200)]
    code, out = _converse(srv, _lines(INIT, INITIALIZED, *calls), {100 + i for i in range(200)})
    assert code == 0
    results = [json.loads(line) for line in out.splitlines()]
    answered = [r["id"] for r in results if isinstance(r.get("id"), int) and r["id"] >= 100]
    assert sorted(answered) == list(range(100, 300))
    by_id = _responses(out)
    assert all(_echoed(by_id[100 + i]) == f"n{i}" for i in range(200))


_ECHO_CHILD = """
import os
import anyio
from mcp.shared.message import SessionMessage
from meith_core.mcp.stdio import stdio_streams

async def main():
    async with stdio_streams() as (read, write):
        print("a stray print", flush=True)
        os.write(1, b"a stray write to fd 1\\n")
        async for item in read:
            if isinstance(item, SessionMessage):
                await write.send(item)
        await write.aclose()
    print("after:", os.get_blocking(0), os.get_blocking(1), flush=True)

anyio.run(main)
"""


@pytest.mark.slow
def test_stray_output_goes_to_stderr_and_the_descriptors_come_back() -> None:
    """While the transport serves, fd 1 is not the MCP stream (a stray print or write lands on
    stderr); on exit fd 0 and 1 are the pipes again, blocking as they were found."""
    import sys

    ping = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
    proc = subprocess.run(
        [sys.executable, "-c", _ECHO_CHILD],
        input=_lines(ping),
        capture_output=True,
        timeout=60,
        check=True,
    )
    first, after = proc.stdout.decode().splitlines()
    assert json.loads(first) == ping
    assert after == "after: True True"
    assert b"a stray print\n" in proc.stderr
    assert b"a stray write to fd 1\n" in proc.stderr
