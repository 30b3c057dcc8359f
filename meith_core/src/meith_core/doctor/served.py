"""A `meith serve` of the doctor's own: its own home, registry of homes and socket, started
as a child of the doctor, its plugins approved in its own home, and stopped with everything
it started."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from meith_core.base.home import MeithHome
from meith_core.base.peers import parent_pid
from meith_core.client import Client

START_TIMEOUT_S: Final = 120.0
STOP_TIMEOUT_S: Final = 15.0
#: Plugins approved by the runtime itself (part of meith).
_BUILT_IN: Final = frozenset({"core"})


class LabError(RuntimeError):
    """The lab could not do what an entry asked (a runtime that did not start, a call that
    failed): the entry is inconclusive, never held."""


def meith_command() -> list[str]:
    """How to run this installation's `meith`: the script beside this interpreter, else the
    interpreter itself."""
    script = Path(sys.executable).parent / "meith"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-c", "from meith_core.cli import run; run()"]


class Served:
    """One runtime on `root` (home `root/meith-home`, socket `root/run/meith.sock`)."""

    def __init__(self, root: Path, env: Mapping[str, str]) -> None:
        self.root = root
        root.mkdir(exist_ok=True)
        self.home = MeithHome(root / "meith-home").ensure()
        run = root / "run"
        run.mkdir(mode=0o700, exist_ok=True)
        self.socket = str(run / "meith.sock")
        self.env = {**env, "MEITH_HOME": str(self.home.root)}
        self.proc: subprocess.Popen[bytes] | None = None
        self._out = self.home.root / "serve.out"

    def start(self) -> None:
        with open(self._out, "wb") as out:
            self.proc = subprocess.Popen(
                [*meith_command(), "serve", "--socket", self.socket, "--log-format", "json"],
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while b"listening on" not in self._out.read_bytes():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise LabError(f"meith serve did not start:\n{self.output()[-2000:]}")
            time.sleep(0.05)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def output(self) -> str:
        try:
            return self._out.read_text(errors="replace")
        except OSError:
            return ""

    def client(
        self, caller: str = "cli", *, label: str | None = None, cwd: str | None = None
    ) -> Client:
        return Client(self.socket, caller=caller, label=label, cwd=cwd, connect_timeout=10.0)

    def content(self, tool: str, arguments: dict[str, Any] | None = None) -> Any:
        """A tool's content, called as the local user (the doctor is not the runtime's child)."""
        with self.client() as client:
            result = client.call(tool, arguments or {}, timeout_ms=60_000)
        if not result.ok:
            raise LabError(f"{tool} failed: {result.to_wire()}")
        return result.content

    def approve_plugins(self) -> list[dict[str, Any]]:
        """Approve every loaded plugin for all it requests, in this runtime's own home (the
        fingerprints from its listing); returns the listing."""
        from meith_core.host.trust_edits import TrustEditor

        listing: list[dict[str, Any]] = self.content("list_plugins")
        editor = TrustEditor(self.home, "meith doctor (its own runtime)")
        for plugin in listing:
            if plugin["id"] in _BUILT_IN or plugin["status"] != "loaded":
                continue
            if not plugin["requestedCapabilities"] or plugin.get("fingerprint") is None:
                continue
            editor.approve_plugin(
                plugin["id"],
                plugin["requestedCapabilities"],
                plugin["fingerprint"],
                distribution=plugin["distribution"],
                version=plugin["version"],
                tools=plugin["tools"],
            )
        return listing

    def stop(self) -> None:
        """SIGTERM, then SIGKILL; every process it started, and what they left behind (the
        runtime adopts orphans), is ended too."""
        proc = self.proc
        if proc is None:
            return
        left = descendants(proc.pid)
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        end_processes(left)


def descendants(pid: int) -> list[int]:
    """Every process below `pid` now (Linux /proc)."""
    children: dict[int, list[int]] = {}
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if name.isdigit():
                parent = parent_pid(int(name))
                if parent is not None:
                    children.setdefault(parent, []).append(int(name))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def end_processes(pids: list[int]) -> None:
    """SIGKILL each that still runs, through a pidfd taken first (a pid reused since is not
    touched once pinned), and wait until they are gone."""
    fds: list[int] = []
    for pid in pids:
        with contextlib.suppress(OSError):
            fds.append(os.pidfd_open(pid))
    for fd in fds:
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(fd, signal.SIGKILL)
    deadline = time.monotonic() + 5
    for fd in fds:
        with contextlib.suppress(OSError):
            while time.monotonic() < deadline:
                ready, _, _ = select.select([fd], [], [], 0.1)
                if ready:
                    break
        os.close(fd)


__all__ = ["LabError", "Served", "descendants", "end_processes", "meith_command"]
