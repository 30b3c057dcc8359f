"""A cancellation token shared by the event loop thread and worker threads."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable

import structlog


class CancelToken:
    """Set once; observable from async code (`wait`), threads (`is_set`) and callbacks.

    `cancel()` may be called from any thread.
    """

    __slots__ = ("_callbacks", "_lock", "_loop", "_reason", "_set", "_waiters")

    def __init__(self) -> None:
        # A flag under a lock, not a threading.Event: nobody blocks a thread on it, and one
        # token is made per call.
        self._set = False
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._reason = ""

    @property
    def reason(self) -> str:
        return self._reason

    def is_set(self) -> bool:
        return self._set

    def cancel(self, reason: str = "cancelled") -> None:
        with self._lock:
            if self._set:
                return
            self._reason = reason
            self._set = True
            callbacks, self._callbacks = self._callbacks, []
            waiters, self._waiters = self._waiters, []
        for loop, fut in waiters:
            with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits
                loop.call_soon_threadsafe(_resolve, fut)
        for cb in callbacks:
            _run_callback(cb)

    def add_callback(self, cb: Callable[[], None]) -> Callable[[], None]:
        """Run `cb` on cancel (at once if already cancelled); returns a remover."""
        with self._lock:
            if not self._set:
                self._callbacks.append(cb)

                def remove() -> None:
                    with self._lock:
                        if cb in self._callbacks:
                            self._callbacks.remove(cb)

                return remove
        _run_callback(cb)
        return lambda: None

    async def wait(self) -> None:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if self._set:
                return
            entry = (loop, fut)
            self._waiters.append(entry)
        try:
            await fut
        finally:
            with self._lock:
                if entry in self._waiters:
                    self._waiters.remove(entry)

    def link(self, parent: CancelToken) -> Callable[[], None]:
        """Cancel this token when `parent` is cancelled."""
        return parent.add_callback(lambda: self.cancel(parent.reason))


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def _run_callback(cb: Callable[[], None]) -> None:
    # Callbacks are tool code (kill a process...); one that raises must not stop the others
    # nor the executor that cancels (on a timeout, from inside the call pipeline).
    try:
        cb()
    except Exception:
        structlog.get_logger("meith.cancel").exception("cancel callback failed", callback=repr(cb))
