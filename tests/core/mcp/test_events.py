"""The bridge's SSE event store (`meith_core.mcp.events`) without a bridge: which session each
event belongs to, what a replay sends, and the caps. A stand-in for the SDK's transport stores
events the way it does: in the request that sends them, or in a task the request that opened
the session started."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.server.streamable_http import EventMessage

from meith_core.mcp.events import BoundedEventStore, ResumableStreams

Work = Callable[[], Awaitable[Any]]


def note(n: int, pad: int = 0) -> types.JSONRPCNotification:
    return types.JSONRPCNotification(
        jsonrpc="2.0", method="notifications/message", params={"n": n, "pad": "x" * pad}
    )


class Transport:
    """ASGI in front of the store: each request runs `work`, then answers 200 with the session
    ID when it opens one, as the SDK does."""

    def __init__(self, store: BoundedEventStore) -> None:
        self.store = store
        self.front = ResumableStreams(self._app, store)
        self._work: Work | None = None
        self._opens: str | None = None
        self.got: Any = None

    async def _app(self, scope: Any, receive: Any, send: Any) -> None:
        assert self._work is not None
        self.got = await self._work()
        headers = [(b"mcp-session-id", self._opens.encode())] if self._opens else []
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b""})

    async def request(
        self,
        work: Work,
        *,
        session: str | None = None,
        opens: str | None = None,
        method: str = "POST",
        last: str | None = None,
    ) -> tuple[int, Any]:
        self._work, self._opens, self.got = work, opens, None
        headers = [(b"mcp-session-id", session.encode())] if session else []
        headers += [(b"last-event-id", last.encode())] if last else []
        scope = {"type": "http", "method": method, "path": "/mcp", "headers": headers}
        answers: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            answers.append(message)

        await self.front(scope, receive, send)
        return answers[0]["status"], self.got

    async def replay(self, session: str, last: str) -> tuple[str | None, list[int]]:
        seen: list[int] = []

        async def collect(event: EventMessage) -> None:
            assert event.event_id
            seen.append(event.message.params["n"])

        async def work() -> str | None:
            return await self.store.replay_events_after(last, collect)

        status, stream = await self.request(work, session=session, method="GET", last=last)
        assert status == 200
        return stream, seen


@pytest.mark.anyio
async def test_a_replay_sends_only_the_asking_sessions_later_events_of_that_stream() -> None:
    store = BoundedEventStore()
    transport = Transport(store)
    later = anyio.Event()
    ids: dict[str, str] = {}

    async def store_as(key: str, stream: str, message: Any) -> str:
        ids[key] = await store.store_event(stream, message)
        return ids[key]

    async with anyio.create_task_group() as sessions:

        def opening(session: str) -> Work:
            async def work() -> None:
                # Before the response names the session, and in a task this request starts
                # (as the SDK's message router), which outlives it.
                await store_as(f"{session}-prime0", "0", None)
                await store_as(f"{session}-init", "0", note(0))

                async def router() -> None:
                    await later.wait()
                    await store_as(f"{session}-late", "2", note(9 if session == "A" else 8))

                sessions.start_soon(router)

            return work

        await transport.request(opening("A"), opens="A")
        await transport.request(opening("B"), opens="B")
        for session, n in (("A", 1), ("B", 101), ("A", 2)):

            async def work(session: str = session, n: int = n) -> None:
                if f"{session}-prime2" not in ids:
                    await store_as(f"{session}-prime2", "2", None)
                await store_as(f"{session}-{n}", "2", note(n))
                await store_as(f"{session}-other{n}", "3", note(n + 50))

            await transport.request(work, session=session)
        later.set()

    assert await transport.replay("A", ids["A-prime2"]) == ("2", [1, 2, 9])
    assert await transport.replay("B", ids["B-prime2"]) == ("2", [101, 8])
    assert await transport.replay("A", ids["A-prime0"]) == ("0", [0])
    assert await transport.replay("A", ids["A-2"]) == ("2", [9])
    assert store.resumable("A", ids["A-prime2"])
    assert not store.resumable("B", ids["A-prime2"])
    assert not store.resumable("A", "no-such-event")

    # A GET resuming another session's event, or an unknown one, never reaches the transport.
    reached: list[str] = []

    async def reach() -> None:
        reached.append("transport")

    for session, last in (("B", ids["A-prime2"]), ("A", "no-such-event")):
        status, _ = await transport.request(reach, session=session, method="GET", last=last)
        assert status == 400
    assert reached == []
    # Nor does it stop anything else: a POST carrying one is the transport's to answer.
    status, _ = await transport.request(reach, session="B", last=ids["A-1"])
    assert status == 200
    assert reached == ["transport"]


@pytest.mark.anyio
async def test_an_event_stored_outside_any_request_is_nobodys() -> None:
    store = BoundedEventStore()
    transport = Transport(store)
    orphan = await store.store_event("1", note(1))

    async def after() -> None:
        await store.store_event("1", note(2))

    await transport.request(after, session="A")
    assert not store.resumable("A", orphan)
    status, _ = await transport.request(
        lambda: anyio.sleep(0), session="A", method="GET", last=orphan
    )
    assert status == 400


@pytest.mark.anyio
async def test_the_store_keeps_at_most_its_caps_oldest_out_first() -> None:
    by_count = BoundedEventStore(max_events=3)
    transport = Transport(by_count)
    ids: list[str] = []

    async def five() -> None:
        for n in range(5):
            ids.append(await by_count.store_event("1", note(n)))

    await transport.request(five, session="A")
    assert [by_count.resumable("A", i) for i in ids] == [False, False, True, True, True]
    assert await transport.replay("A", ids[2]) == ("1", [3, 4])

    size = len(note(0, pad=100).model_dump_json(by_alias=True, exclude_unset=True))
    by_size = BoundedEventStore(max_bytes=2 * size)
    transport = Transport(by_size)
    kept: list[str] = []
    states: list[list[bool]] = []

    async def sized() -> None:
        for n, pad in enumerate((100, 100, 100, 0, 10 * size)):
            kept.append(await by_size.store_event("1", note(n, pad)))
            states.append([by_size.resumable("A", i) for i in kept])

    await transport.request(sized, session="A")
    assert states == [
        [True],
        [True, True],  # exactly the cap
        [False, True, True],
        [False, False, True, True],  # a smaller one fits beside its predecessor
        [False, False, False, False, True],  # larger than the cap: kept alone, as the newest
    ]
    assert await transport.replay("A", kept[-1]) == ("1", [])
