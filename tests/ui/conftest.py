"""Console fixtures: a real `meith serve` (with the `probe` test plugin, approved) and a real
`meith ui --no-browser` talking to it, as the tests' local user; raw HTTP to it; and the page in
a real Chromium (Playwright), with where its screenshots go.

Screenshots go to a temporary directory: a test run changes no tracked file. `nox -s
screenshots` sets MEITH_SCREENSHOTS_DIR=docs/images to refresh the ones docs/console.md shows."""

from __future__ import annotations

import http.client
import json
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
#: Where the console tests write their screenshots (the docs' images, in `nox -s screenshots`).
SCREENSHOTS_ENV = "MEITH_SCREENSHOTS_DIR"


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
def console(
    meith_server: Callable[..., MeithServer], tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Console]:
    """Parametrized indirectly, the parameter is environment the runtime has and the CLI not
    (`{"PROBE_EXTRA_TOOL": "1"}`: the runtime loads a probe that changed since the CLI
    approved it)."""
    serve_only: dict[str, str] = getattr(request, "param", {})
    probe_dir = tmp_path / "probe"
    probe_dir.mkdir()
    site = install_probe(tmp_path / "probe-site")
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    env = {"PYTHONPATH": path, "PROBE_DIR": str(probe_dir)}
    srv = meith_server(env={**env, **serve_only})
    for key in serve_only:
        srv.cli_env.pop(key, None)
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


# -- raw HTTP ---------------------------------------------------------------------------------


def request(
    c: Console,
    method: str,
    path: str,
    *,
    headers: dict[str, str] | None = None,
    body: dict[str, Any] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    host, port = c.host.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    sent = {"Host": c.host, **(headers or {})}
    data = json.dumps(body).encode() if body is not None else None
    if data is not None:
        sent.setdefault("Content-Type", "application/json")
    conn.request(method, path, body=data, headers=sent)
    resp = conn.getresponse()
    out = resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    conn.close()
    return out


def login(c: Console) -> tuple[str, str]:
    """The cookie the secret buys, and the CSRF token of the page it opens."""
    status, headers, _ = request(c, "GET", f"/?k={c.secret}")
    assert status == 303
    assert headers["location"] == "/"
    cookie = headers["set-cookie"]
    assert "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie
    pair = cookie.split(";", 1)[0]
    status, _, page = request(c, "GET", "/", headers={"Cookie": pair})
    assert status == 200
    match = re.search(rb'name="meith-csrf" content="([^"]+)"', page)
    assert match
    return pair, match.group(1).decode()


class Session:
    """The page's side of the door, logged in: GETs with the cookie, POSTs with its Origin and
    CSRF token too; each answer as (status, JSON)."""

    def __init__(self, c: Console) -> None:
        self.console = c
        self.cookie, self.csrf = login(c)

    def get(self, path: str) -> tuple[int, Any]:
        status, _, body = request(self.console, "GET", path, headers={"Cookie": self.cookie})
        return status, json.loads(body)

    def post(self, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        headers = {
            "Cookie": self.cookie,
            "Origin": f"http://{self.console.host}",
            "X-Meith-CSRF": self.csrf,
        }
        status, _, data = request(self.console, "POST", path, headers=headers, body=body or {})
        return status, json.loads(data)


# -- the page in a real Chromium ----------------------------------------------------------------


@pytest.fixture
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory screenshots are written to: a temporary one, unless MEITH_SCREENSHOTS_DIR
    names one (`nox -s screenshots`: docs/images)."""
    chosen = os.environ.get(SCREENSHOTS_ENV)
    if chosen:
        Path(chosen).mkdir(parents=True, exist_ok=True)
        return Path(chosen)
    return tmp_path_factory.mktemp("screenshots")


@dataclass
class Pages:
    """Tabs of one Chromium on the console, logged in once; every GET of theirs answered 404
    (a favicon the page does not have, say) is in `missing`."""

    context: Any
    console: Console
    missing: list[str] = field(default_factory=list)
    logged_in: bool = False

    def open(self, *, fake_clock: bool = False) -> Any:
        """A new tab on the console; `fake_clock` lets the test move the page's time
        (`tab.clock`)."""
        from playwright.sync_api import expect

        tab = self.context.new_page()
        tab.on("response", self._answered)
        if fake_clock:
            tab.clock.install()
        tab.goto(f"{self.console.base}/" if self.logged_in else self.console.url)
        self.logged_in = True
        expect(tab.locator("#runtime")).to_have_text("runtime connected")
        return tab

    def _answered(self, response: Any) -> None:
        if response.status == 404 and response.request.method == "GET":
            self.missing.append(response.url)


@pytest.fixture
def pages(console: Console) -> Iterator[Pages]:
    from playwright.sync_api import sync_playwright

    from tests.browser.support import require_browser

    browser_path = require_browser().path
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=browser_path, headless=True)
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        try:
            yield Pages(context, console)
        finally:
            browser.close()


@pytest.fixture
def page(pages: Pages) -> Any:
    return pages.open()
