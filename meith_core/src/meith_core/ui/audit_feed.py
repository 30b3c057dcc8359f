"""The audit trail as the console shows it: read from `$MEITH_HOME` like `meith audit --follow`
(the same `collect` and `Follower`), polled several times a second, new records published to
the pages; and the chain's verification state (`meith audit verify`)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from pathlib import Path
from typing import Any, Final

from meith_core.audit.follow import Follower, collect
from meith_core.audit.log import AuditLog
from meith_core.audit.verify import verify
from meith_core.base.home import MeithHome
from meith_core.base.instances import live_instances
from meith_core.ui.link import Hub

#: Records the console keeps to show a page that opens (the newest).
KEEP: Final = 500
#: Seconds between reads of what was appended (the pages see a new record within a second).
POLL_S: Final = 0.25
#: Seconds between re-verifications of the chain while records keep arriving.
REVERIFY_S: Final = 30.0
#: Seconds between checks that the runtime of a call still running is alive.
LIVENESS_S: Final = 1.0


class AuditFeed:
    def __init__(self, home: MeithHome, hub: Hub) -> None:
        self.home = home
        self.hub = hub
        self.path: Path = home.audit_path
        self.recent: deque[dict[str, Any]] = deque(maxlen=KEEP)
        self.verification: dict[str, Any] = {"state": "not checked yet"}
        #: Privileged calls that started and have no outcome yet, by (session, request).
        self.running: dict[tuple[Any, Any], dict[str, Any]] = {}
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task

    async def _run(self) -> None:
        follower, records = await asyncio.to_thread(self._open)
        self.recent.extend(records)
        for record in records:
            if record.get("outcome") == "running":
                self.running[_key(record)] = record
        await self.check()
        checked, unchecked = time.monotonic(), False
        alive_checked = time.monotonic()
        try:
            while True:
                await asyncio.sleep(POLL_S)
                fresh = await asyncio.to_thread(follower.new_records)
                unchecked = unchecked or bool(fresh)
                if unchecked and time.monotonic() - checked > REVERIFY_S:
                    await self.check()
                    checked, unchecked = time.monotonic(), False
                for record in fresh:
                    self._add(record)
                if self.running and time.monotonic() - alive_checked > LIVENESS_S:
                    alive_checked = time.monotonic()
                    await self._reap()
        finally:
            follower.close()

    def _add(self, record: dict[str, Any]) -> None:
        """A record as the pages show it: an intent is a call `running` until its outcome
        record arrives (or its runtime dies: `interrupted`)."""
        kind = record.get("kind")
        if kind == "intent":
            record = {**record, "outcome": "running"}
            self.running[_key(record)] = record
        elif kind is None:
            self.running.pop(_key(record), None)
        self._publish(record)

    def _publish(self, record: dict[str, Any]) -> None:
        self.recent.append(record)
        self.hub.publish({"type": "audit", "record": record})

    async def _reap(self) -> None:
        live = await asyncio.to_thread(lambda: {r.pid for r in live_instances(self.home)})
        for key, record in list(self.running.items()):
            if record.get("pid") not in live:
                del self.running[key]
                self._publish({**record, "outcome": "interrupted"})

    def _open(self) -> tuple[Follower, list[dict[str, Any]]]:
        # Opened first, at the end: what is written while the trail is read is followed.
        follower = Follower(self.path)
        live = {r.pid for r in live_instances(self.home)}
        return follower, collect(AuditLog(self.path).read(), KEEP, lambda _r: True, live)

    async def check(self) -> dict[str, Any]:
        """Verify the hash chain now (off the event loop) and publish the result."""
        self.verification = {"state": "checking"}
        report = await asyncio.to_thread(verify, self.path)
        self.verification = {
            "state": "ok" if report.ok else "broken",
            "checkedAt": time.time_ns() // 1_000_000,
            **report.to_json(),
        }
        self.hub.publish({"type": "verification", "verification": self.verification})
        return self.verification


def _key(record: dict[str, Any]) -> tuple[Any, Any]:
    return (record.get("sessionId"), record.get("requestId"))
