"""Console fixtures: a real `meith serve` (with the `probe` test plugin, approved) and a real
`meith ui --no-browser` talking to it, as the tests' local user."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from meith_core.client import Client
from tests.harness import MEITH, MeithServer
from tests.server.probe_plugin import install_probe

_URL = re.compile(rb"meith ui: (https?://[^\s/]+)/\?k=(\S+)")


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("browser") is not None:
        from tests.browser.support import require_browser

        require_browser()


@dataclass
class Console:
    server: MeithServer
    proc: subprocess.Popen[bytes]
    base: str
    secret: str
    out: Path
    agents: list[threading.Thread] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"{self.base}/?k={self.secret}"

    @property
    def host(self) -> str:
        return self.base.split("://", 1)[1]

    def agent_call(
        self, tool: str, arguments: dict[str, Any], *, label: str = "test-agent"
    ) -> dict[str, Any]:
        """Start an agent's call in a thread (it may wait for an approval); its result lands
        in the returned dict under "result" when it completes."""
        box: dict[str, Any] = {}

        def run() -> None:
            with Client(self.server.socket, caller="agent", label=label) as client:
                box["result"] = client.call_raw(tool, arguments)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        self.agents.append(thread)
        return box


@pytest.fixture
def console(meith_server: Callable[..., MeithServer], tmp_path: Path) -> Iterator[Console]:
    probe_dir = tmp_path / "probe"
    probe_dir.mkdir()
    site = install_probe(tmp_path / "probe-site")
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    env = {"PYTHONPATH": path, "PROBE_DIR": str(probe_dir)}
    srv = meith_server(env=env)
    srv.cli_env.update(env)
    srv.approve("probe")
    out = tmp_path / "ui.out"
    with open(out, "wb") as fh:
        proc = subprocess.Popen(
            [MEITH, "ui", "--no-browser", "--socket", srv.socket],
            env=srv.cli_env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 30
        while not (match := _URL.search(out.read_bytes())):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"meith ui did not start:\n{out.read_text()}")
            time.sleep(0.05)
        yield Console(srv, proc, match.group(1).decode(), match.group(2).decode(), out)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
