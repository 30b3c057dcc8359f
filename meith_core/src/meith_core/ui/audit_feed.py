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


class AuditFeed:
    def __init__(self, home: MeithHome, hub: Hub) -> None:
        self.home = home
        self.hub = hub
        self.path: Path = home.audit_path
        self.recent: deque[dict[str, Any]] = deque(maxlen=KEEP)
        self.verification: dict[str, Any] = {"state": "not checked yet"}
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
        await self.check()
        checked, unchecked = time.monotonic(), False
        try:
            while True:
                await asyncio.sleep(POLL_S)
                fresh = await asyncio.to_thread(follower.new_records)
                unchecked = unchecked or bool(fresh)
                if unchecked and time.monotonic() - checked > REVERIFY_S:
                    await self.check()
                    checked, unchecked = time.monotonic(), False
                for record in fresh:
                    if record.get("kind") == "intent":
                        continue  # its outcome follows
                    self.recent.append(record)
                    self.hub.publish({"type": "audit", "record": record})
        finally:
            follower.close()

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
