"""A caller that reads slower than a dev server writes: the dev server is slowed down instead
of the runtime queueing without bound; a caller that stops reading only lags, and is told."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest

from meith_core import CancelToken
from meith_plugins_process import attach
from tests.process.conftest import Proc
from tests.process.support import PY, eventually, ok, unread_bytes

pytestmark = pytest.mark.anyio

LINES = 200_000  # ~9 MB: far more than a pipe (64 KiB) and the backlog can hold


class SlowCaller:
    """An event sink with flow control, as the socket server's is; congestion is set by hand."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.congested = False
        self._flowing = asyncio.Event()
        self._flowing.set()

    def __call__(self, event: dict[str, Any]) -> None:
        self.events.append(event)

    def block(self) -> None:
        self.congested = True
        self._flowing.clear()

    def unblock(self) -> None:
        self.congested = False
        self._flowing.set()

    async def wait_flowing(self) -> None:
        await self._flowing.wait()

    @property
    def messages(self) -> list[str]:
        # A log event carries one line or several joined by newlines.
        return [line for e in self.events for line in e["message"].split("\n")]


def generator(tmp_path) -> list[str]:
    trigger = tmp_path / "go"
    code = (
        "import os,sys,time\n"
        "print('ready', flush=True)\n"
        f"while not os.path.exists({str(trigger)!r}): time.sleep(0.01)\n"
        f"for s in range(0, {LINES}, 1000):\n"
        "    sys.stdout.write(''.join(f'line {i}\\n' for i in range(s, s + 1000)))\n"
        "print('END', flush=True)\n"
        "time.sleep(300)\n"
    )
    return [PY, "-c", code]


@pytest.mark.slow
async def test_a_congested_caller_pauses_the_dev_server_and_gets_every_line(
    proc: Proc, tmp_path
) -> None:
    argv = generator(tmp_path)
    dev = ok(
        await proc.rt.call(
            "start_dev_server", {"cwd": str(tmp_path), "command": argv[0], "args": argv[1:]}
        )
    )
    server = proc.plugin.dev_servers.by_id[dev["id"]]
    caller = SlowCaller()
    cancel = CancelToken()
    result: dict[str, Any] = {}

    async def attach_logs() -> None:
        result["res"] = await proc.rt.call(
            "attach_process_logs", {"devServerId": dev["id"]}, on_event=caller, cancel=cancel
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(attach_logs)
        await eventually(lambda: "ready" in caller.messages, "the replay")
        caller.block()
        (tmp_path / "go").touch()
        # The forwarder holds the dev server's output: its pipes are no longer read, so what
        # the runtime has of it stops growing (observed, not asked of the pipe transport:
        # `is_reading()` is missing from 3.11.2's pipe transports)...
        await eventually(lambda: server._output_holds, "the hold")
        # Output waits in the pipe while the event loop goes round: each round would read a
        # readable pipe, and none does.
        assert server._transport is not None
        stdout = server._transport.get_pipe_transport(1).get_extra_info("pipe").fileno()
        await eventually(lambda: unread_bytes(stdout) > 0, "output waiting in the pipe")
        held = server.logs.next_seq
        for _ in range(20):
            await asyncio.sleep(0)  # one round of the loop, readable pipes included
        assert unread_bytes(stdout) > 0
        assert server.logs.next_seq == held
        # ...so the generator cannot finish: 9 MB do not fit in a pipe and a bounded backlog.
        assert not any(e[2] == "END" for e in server.logs.since(0))
        caller.unblock()
        await eventually(lambda: caller.messages[-1:] == ["END"], "every line", deadline_s=60)
        cancel.cancel()
    assert caller.messages == ["ready", *(f"line {i}" for i in range(LINES)), "END"]
    assert ok(result["res"]) == {"devServerId": dev["id"], "attached": True}
    # Every line arrived after the hold, so reading resumed.
    assert not server._output_holds


@pytest.mark.slow
async def test_a_caller_that_stops_reading_only_holds_the_dev_server_briefly(
    proc: Proc, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(attach, "STALL_S", 0.3)
    argv = generator(tmp_path)
    dev = ok(
        await proc.rt.call(
            "start_dev_server", {"cwd": str(tmp_path), "command": argv[0], "args": argv[1:]}
        )
    )
    server = proc.plugin.dev_servers.by_id[dev["id"]]
    stuck, fine = SlowCaller(), SlowCaller()
    cancel = CancelToken()

    async def attach_logs(caller: SlowCaller) -> None:
        await proc.rt.call(
            "attach_process_logs", {"devServerId": dev["id"]}, on_event=caller, cancel=cancel
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(attach_logs, stuck)
        tg.start_soon(attach_logs, fine)
        await eventually(
            lambda: "ready" in stuck.messages and "ready" in fine.messages, "both attached"
        )
        stuck.block()
        (tmp_path / "go").touch()
        # After the stall period the dev server runs on: the other client gets everything.
        await eventually(
            lambda: fine.messages[-1:] == ["END"], "the other client's lines", deadline_s=60
        )
        assert not server._output_holds
        stuck.unblock()
        await eventually(
            lambda: stuck.messages[-1:] == ["END"], "the lagging client's tail", deadline_s=60
        )
        cancel.cancel()
    assert fine.messages == ["ready", *(f"line {i}" for i in range(LINES)), "END"]
    skipped = [m for m in stuck.messages if m.startswith("[system] skipped ")]
    assert len(skipped) == 1
    count = int(skipped[0].split()[2])
    lines = [m for m in stuck.messages if m.startswith("line ")]
    # What it got is in order, what it missed is counted, and its backlog stayed bounded.
    assert [int(m.split()[1]) for m in lines] == sorted(int(m.split()[1]) for m in lines)
    assert len(lines) + count == LINES
    assert count > 0


async def test_a_non_owner_that_stops_reading_never_holds_the_dev_server(
    proc: Proc, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An owner may hold its own server back for this long; a non-owner not at all.
    monkeypatch.setattr(attach, "STALL_S", 3600.0)
    agent = proc.rt.open_session("agent")
    proc.rt.grant(agent, ["starts-process"])
    user = proc.rt.open_session("cli")  # may read the agent's server, but does not own it
    argv = generator(tmp_path)
    dev = ok(
        await proc.rt.call(
            "start_dev_server",
            {"cwd": str(tmp_path), "command": argv[0], "args": argv[1:]},
            caller=agent,
        )
    )
    server = proc.plugin.dev_servers.by_id[dev["id"]]
    stuck = SlowCaller()
    cancel = CancelToken()

    async def attach_logs() -> None:
        await proc.rt.call(
            "attach_process_logs",
            {"devServerId": dev["id"]},
            on_event=stuck,
            cancel=cancel,
            caller=user,
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(attach_logs)
        await eventually(lambda: "ready" in stuck.messages, "attached")
        stuck.block()
        (tmp_path / "go").touch()
        await eventually(
            lambda: any(e[2] == "END" for e in server.logs.tail(5)),
            "the dev server runs to its end",
            deadline_s=60,
        )
        assert not server._output_holds
        stuck.unblock()
        await eventually(lambda: stuck.messages[-1:] == ["END"], "the tail", deadline_s=60)
        cancel.cancel()
    assert any("skipped" in m and "fell behind" in m for m in stuck.messages)
