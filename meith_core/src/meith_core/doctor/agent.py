"""One agent session of the doctor's lab (or the local user's, for an entry that needs the
CLI's side): its calls, its commands and dev servers, and waiting on what they do."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from meith_core.client import Client
from meith_core.doctor.served import LabError
from meith_core.protocol.results import ToolResult

#: The line a dev server's script ends with, so its output is known to be whole.
DONE: Final = "meith-doctor-done"


class Agent:
    """One agent session of the lab, holding the grant the entry asked for."""

    def __init__(self, client: Client, scope: Path, label: str) -> None:
        self.client = client
        self.scope = scope
        self.label = label
        self.session_id = str(client.hello().get("sessionId"))

    def call(self, tool: str, arguments: dict[str, Any], timeout_ms: int = 60_000) -> ToolResult:
        return self.client.call(tool, arguments, timeout_ms=timeout_ms)

    def content(self, tool: str, arguments: dict[str, Any], timeout_ms: int = 60_000) -> Any:
        """A call's content; a failed call is the lab's failure (the entry is inconclusive)."""
        result = self.call(tool, arguments, timeout_ms)
        if not result.ok:
            raise LabError(f"{tool} failed: {json.dumps(result.to_wire())[:1500]}")
        return result.content

    def run(
        self,
        shell: str,
        *,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        timeout_ms: int = 60_000,
    ) -> dict[str, Any]:
        """`run_command {shell}` in `cwd` (the agent's directory); its content."""
        arguments: dict[str, Any] = {"cwd": str(cwd or self.scope), "shell": shell}
        arguments["timeoutMs"] = timeout_ms
        if env:
            arguments["env"] = dict(env)
        content: dict[str, Any] = self.content("run_command", arguments, timeout_ms + 30_000)
        return content

    def start(
        self,
        shell: str,
        *,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        ports: Sequence[int] = (),
    ) -> str:
        """`start_dev_server {command}` (its `ports` opened on the host); its id."""
        arguments: dict[str, Any] = {"cwd": str(cwd or self.scope), "command": shell}
        if env:
            arguments["env"] = dict(env)
        if ports:
            arguments["ports"] = list(ports)
        return str(self.content("start_dev_server", arguments)["id"])

    def logs(self, process_id: str) -> str:
        found = self.content("get_process_logs", {"processId": process_id})
        return "\n".join(str(e["text"]) for e in found["logs"])

    def dev(
        self,
        shell: str,
        *,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        timeout_s: float = 60.0,
    ) -> str:
        """A dev server running `shell`, then echoing DONE: its output once DONE is there."""
        process_id = self.start(f"{shell}; echo {DONE}", cwd=cwd, env=env)
        text = until(lambda: self._done(process_id), timeout_s, f"{shell!r} to finish")
        self.call("stop_dev_server", {"devServerId": process_id})
        return str(text)

    def _done(self, process_id: str) -> str:
        text = self.logs(process_id)
        return text if DONE in text.splitlines() else ""

    def close(self) -> None:
        self.client.close()


def until(predicate: Any, timeout_s: float, what: str, interval: float = 0.05) -> Any:
    """Poll `predicate` until it returns something truthy; a LabError past `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise LabError(f"timed out waiting for {what}")
        time.sleep(interval)


__all__ = ["DONE", "Agent", "until"]
