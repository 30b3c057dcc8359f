"""`CancelToken`, shared by the event loop and worker threads."""

from __future__ import annotations

import threading

import anyio
import pytest

from meith_core import CancelToken


@pytest.mark.anyio
async def test_a_token_cancelled_from_another_thread_wakes_its_waiter() -> None:
    token = CancelToken()
    threading.Timer(0.01, token.cancel, args=("from a thread",)).start()
    with anyio.fail_after(30):
        await token.wait()
    assert token.is_set()
    assert token.reason == "from a thread"


def test_cancel_is_idempotent_and_keeps_the_first_reason() -> None:
    token = CancelToken()
    calls: list[str] = []
    token.add_callback(lambda: calls.append("cb"))
    token.cancel("first")
    token.cancel("second")
    assert token.reason == "first"
    assert calls == ["cb"]


def test_a_callback_added_after_cancel_runs_at_once_and_removers_work() -> None:
    token = CancelToken()
    calls: list[str] = []
    remove = token.add_callback(lambda: calls.append("removed"))
    remove()
    token.cancel()
    token.add_callback(lambda: calls.append("late"))
    assert calls == ["late"]


def test_a_linked_token_follows_its_parent_with_the_reason() -> None:
    parent, child = CancelToken(), CancelToken()
    unlink = child.link(parent)
    parent.cancel("timeout")
    assert child.is_set()
    assert child.reason == "timeout"
    other = CancelToken()
    unlink_other = other.link(CancelToken())
    unlink_other()
    assert not other.is_set()
    unlink()


def test_a_raising_callback_does_not_stop_the_others() -> None:
    token = CancelToken()
    calls: list[str] = []

    def bad() -> None:
        raise RuntimeError("bug")

    token.add_callback(bad)
    token.add_callback(lambda: calls.append("second"))
    token.cancel()
    assert calls == ["second"]
