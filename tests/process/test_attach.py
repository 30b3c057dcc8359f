"""A dev server's lines to one caller as `log` events: replayed then streamed with levels and
prefixes, every line in order in bounded events, to each of ten callers at once."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meith_core import CancelToken
from tests.process.conftest import Proc
from tests.process.support import PY, eventually, has_log, ok, start

pytestmark = pytest.mark.anyio


@settings(max_examples=40)
@given(
    st.lists(st.text(max_size=200), min_size=1, max_size=30),
    st.sampled_from(["stdout", "stderr", "system"]),
)
def test_emit_lines_sends_every_line_in_order_in_bounded_events(
    lines: list[str], stream: str
) -> None:
    from meith_plugins_process.attach import EVENT_TEXT_MAX, emit_lines, level_and_prefix

    sent: list[tuple[str, str]] = []
    emit_lines(lambda level, message: sent.append((level, message)), stream, lines)
    level, prefix = level_and_prefix(stream)
    assert {lv for lv, _ in sent} == {level}
    assert "\n".join(m for _, m in sent) == "\n".join(prefix + line for line in lines)
    # An event is over the limit only when it is one line that alone is.
    for _, message in sent:
        assert len(message) <= EVENT_TEXT_MAX or "\n" not in message


def test_emit_lines_splits_what_one_event_cannot_carry() -> None:
    from meith_plugins_process.attach import EVENT_TEXT_MAX, emit_lines

    lines = ["a" * 100_000, "b" * 100_000, "c" * 100_000, "d"]
    sent: list[str] = []
    emit_lines(lambda _level, message: sent.append(message), "stderr", lines)
    assert len(sent) == 2
    assert all(len(m) <= EVENT_TEXT_MAX for m in sent)
    assert "\n".join(sent) == "\n".join("[stderr] " + line for line in lines)


@pytest.mark.slow
async def test_attach_replays_then_streams_with_levels_and_prefixes_until_cancelled(
    proc: Proc, tmp_path
) -> None:
    trigger = tmp_path / "go"
    script = f"echo one; echo two >&2; while [ ! -e {trigger} ]; do sleep 0.05; done; echo three; sleep 300"
    dev = await start(proc, tmp_path, script)
    await has_log(proc, dev["id"], "two")
    events: list[dict] = []
    cancel = CancelToken()
    task_result: dict = {}

    async def attach() -> None:
        res = await proc.rt.call(
            "attach_process_logs", {"devServerId": dev["id"]}, on_event=events.append, cancel=cancel
        )
        task_result["res"] = res

    import anyio

    async with anyio.create_task_group() as tg:
        tg.start_soon(attach)
        await eventually(lambda: len(events) >= 2, "replayed lines")
        trigger.touch()
        await eventually(lambda: len(events) >= 3, "the live line")
        cancel.cancel()
    res = task_result["res"]
    assert ok(res) == {"devServerId": dev["id"], "attached": True}
    assert events == [
        {"kind": "log", "level": "info", "message": "one"},
        {"kind": "log", "level": "warn", "message": "[stderr] two"},
        {"kind": "log", "level": "info", "message": "three"},
    ]
    # By cwd: the newest server in that directory.
    events.clear()
    cancel = CancelToken()

    async def attach_cwd() -> None:
        task_result["cwd"] = await proc.rt.call(
            "attach_process_logs", {"cwd": str(tmp_path)}, on_event=events.append, cancel=cancel
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(attach_cwd)
        await eventually(lambda: len(events) >= 3, "the replay")
        ok(await proc.rt.call("stop_dev_server", {"devServerId": dev["id"]}))
        await eventually(
            lambda: any("exited with code" in e["message"] for e in events), "the exit line"
        )
        cancel.cancel()
    assert ok(task_result["cwd"])["devServerId"] == dev["id"]
    assert events[3] == {"kind": "log", "level": "info", "message": "[system] stopping (SIGTERM)"}
    res = await proc.rt.call("attach_process_logs", {"cwd": str(tmp_path / "elsewhere")})
    assert res.error.code in ("TOOL_FAILED", "VALIDATION_ERROR")
    (tmp_path / "empty").mkdir()
    res = await proc.rt.call("attach_process_logs", {"cwd": str(tmp_path / "empty")})
    assert res.error.message == f"No dev server running in {tmp_path / 'empty'}"


async def test_attach_without_replay_sends_only_new_lines(proc: Proc, tmp_path) -> None:
    import anyio

    trigger = tmp_path / "go"
    dev = await start(
        proc,
        tmp_path,
        f"echo old; while [ ! -e {trigger} ]; do sleep 0.05; done; echo new; sleep 300",
    )
    await has_log(proc, dev["id"], "old")
    buffer = proc.plugin.dev_servers.by_id[dev["id"]].logs
    events: list[dict] = []
    cancel = CancelToken()

    async def attach() -> None:
        await proc.rt.call(
            "attach_process_logs",
            {"devServerId": dev["id"], "replay": False},
            on_event=events.append,
            cancel=cancel,
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(attach)
        await eventually(lambda: len(buffer._subscribers) == 1, "the subscription")
        trigger.touch()
        await eventually(lambda: events, "the new line")
        cancel.cancel()
    assert events == [{"kind": "log", "level": "info", "message": "new"}]
    assert buffer._subscribers == []


@pytest.mark.slow
async def test_ten_attached_clients_each_get_every_line_in_order(proc: Proc, tmp_path) -> None:
    import anyio

    lines = 20_000
    trigger = tmp_path / "go"
    code = (
        "import os,sys,time\n"
        "print('ready', flush=True)\n"
        f"while not os.path.exists({str(trigger)!r}): time.sleep(0.02)\n"
        f"sys.stdout.write(''.join(f'line {{i}}\\n' for i in range({lines})))\n"
        "print('done', flush=True)\n"
        "time.sleep(300)\n"
    )
    dev = await start(proc, tmp_path, PY, ["-c", code])
    await has_log(proc, dev["id"], "ready")
    clients = 10
    received: list[list[str]] = [[] for _ in range(clients)]
    cancel = CancelToken()
    results: list = [None] * clients

    async def attach(i: int) -> None:
        results[i] = await proc.rt.call(
            "attach_process_logs",
            {"devServerId": dev["id"]},
            # A log event carries one line or several joined by newlines.
            on_event=lambda e, i=i: received[i].extend(e["message"].split("\n")),
            cancel=cancel,
        )

    async with anyio.create_task_group() as tg:
        for i in range(clients):
            tg.start_soon(attach, i)
        # Replay and subscription are atomic: a client that has replayed "ready" is subscribed.
        await eventually(lambda: all(r[:1] == ["ready"] for r in received), "every client attached")
        trigger.touch()
        await eventually(
            lambda: all(r and r[-1] == "done" for r in received), "every line everywhere"
        )
        cancel.cancel()
    expected = ["ready", *(f"line {i}" for i in range(lines)), "done"]
    for i in range(clients):
        assert received[i] == expected, f"client {i}"
        assert ok(results[i]) == {"devServerId": dev["id"], "attached": True}
