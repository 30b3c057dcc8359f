"""End to end: a real `meith serve`, the real `meith call` CLI and socket clients, real Chromium."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from meith_core.client import Client
from meith_plugins_browser.scripts import POPUP_LOG_PREFIX
from tests.browser.support import Site, decode_png, pixel, require_browser, wait_for
from tests.harness import MeithServer

pytestmark = pytest.mark.browser

BROWSER_TOOLS = {
    "get_tabs", "get_active_tab", "open_browser_tab", "navigate", "go_back", "go_forward",
    "refresh", "focus_browser_tab", "close_browser_tab", "browser_use_start", "browser_use_end",
    "take_screenshot", "get_browser_state", "click_element", "type_text", "scroll_page",
    "send_keys", "cdp_command", "get_console_logs", "get_network_logs",
}  # fmt: skip


@pytest.fixture(scope="module")
def srv(site: Site, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MeithServer]:
    """One `meith serve` (and so one browser) for the module; browser approved, cli granted."""
    require_browser()
    server = MeithServer(tmp_path_factory.mktemp("e2e") / "home")
    try:
        server.approve("browser")
        server.grant("controls-browser")
        yield server
    finally:
        server.stop()


def ok(srv: MeithServer, tool: str, args: dict[str, Any] | None = None) -> Any:
    envelope = srv.call(tool, args)
    assert envelope["ok"], envelope
    assert srv.last is not None
    assert srv.last.returncode == 0
    return envelope.get("content")


def js(srv: MeithServer, tab_id: str, expression: str) -> Any:
    out = ok(
        srv,
        "cdp_command",
        {
            "tabId": tab_id,
            "method": "Runtime.evaluate",
            "params": {"expression": expression, "awaitPromise": True, "returnByValue": True},
        },
    )
    return out["result"]["result"].get("value")


def element(srv: MeithServer, tab_id: str, name: str) -> str:
    state = ok(srv, "get_browser_state", {"tabId": tab_id})
    return next(e["id"] for e in state["elements"] if e.get("name") == name)


def test_the_browser_tools_are_listed_with_capabilities(srv: MeithServer) -> None:
    proc = srv.cli("tools", "--json")
    assert proc.returncode == 0, proc.stderr
    tools = {t["name"]: t for t in json.loads(proc.stdout)}
    assert set(tools) >= BROWSER_TOOLS
    assert tools["cdp_command"]["capabilities"] == ["controls-browser", "accesses-network"]
    assert tools["get_tabs"]["capabilities"] == ["read-only"]
    assert all(tools[name]["plugin"] == "browser" for name in BROWSER_TOOLS)


def test_every_tool_through_meith_call(srv: MeithServer, site: Site) -> None:
    tab = ok(srv, "open_browser_tab", {"url": site.url()})
    tid = tab["id"]
    assert (tab["title"], tab["loadState"], tab["active"]) == ("Index", "ready", True)
    assert tid in {t["id"] for t in ok(srv, "get_tabs")["browserTabs"]}
    assert ok(srv, "get_active_tab")["id"] == tid

    # state, click and type with an effect on the page
    inc = element(srv, tid, "Increment")
    assert ok(srv, "click_element", {"tabId": tid, "elementId": inc}) == {"clicked": inc}
    assert js(srv, tid, "document.getElementById('count').textContent") == "1"
    field = element(srv, tid, "Search")
    assert ok(srv, "type_text", {"tabId": tid, "elementId": field, "text": "hello"}) == {"typed": 5}
    assert "change:true" in js(srv, tid, "document.getElementById('events').textContent")
    ok(srv, "send_keys", {"tabId": tid, "keys": "Enter"})
    assert js(srv, tid, "document.getElementById('submitted').textContent") == "hello"
    stale = srv.call("click_element", {"tabId": tid, "elementId": inc})
    assert stale["error"]["code"] == "TOOL_FAILED"
    assert "stale" in stale["error"]["message"]

    # scroll
    assert ok(srv, "scroll_page", {"tabId": tid, "toY": 200})["scrollY"] == 200
    assert ok(srv, "scroll_page", {"tabId": tid, "deltaY": -50})["scrollY"] == 150
    ok(srv, "scroll_page", {"tabId": tid, "toY": 0})

    # screenshot: the human-mode CLI shows where the file went
    proc = srv.cli("call", "take_screenshot", "--tabId", tid)
    assert proc.returncode == 0, proc.stderr
    path = Path(proc.stderr.split("artifact image/png: ", 1)[1].split()[0])
    assert path.parent == srv.home.artifacts_dir
    assert str(path) in proc.stdout
    width, height, channels, rows = decode_png(path.read_bytes(), rows_wanted=40)
    assert (width, height) == (1280, 720)
    assert pixel(rows, channels, 20, 20) == (255, 0, 0)
    shot = ok(srv, "take_screenshot", {"tabId": tid})
    assert (shot["tabId"], shot["width"], shot["height"]) == (tid, 1280, 720)
    assert Path(shot["path"]).is_file()

    # logs
    console = ok(srv, "get_console_logs", {"tabId": tid})
    assert {"level": "log", "text": "index loaded 42"}.items() <= console[0].items()
    network = ok(srv, "get_network_logs", {"tabId": tid, "limit": 50})
    assert network[0]["url"] == site.url()
    assert (network[0]["status"], network[0]["resourceType"]) == (200, "document")

    # CDP
    cdp = ok(srv, "cdp_command", {"tabId": tid, "method": "Page.getNavigationHistory"})
    assert cdp["result"]["entries"][-1]["url"] == site.url()

    # navigation and history
    assert ok(srv, "navigate", {"tabId": tid, "url": site.url("/next.html")})["title"] == "Next"
    assert ok(srv, "go_back", {"tabId": tid})["title"] == "Index"
    assert ok(srv, "go_forward", {"tabId": tid})["title"] == "Next"
    assert ok(srv, "refresh", {"tabId": tid})["url"] == site.url("/next.html")
    blocked = srv.call("navigate", {"tabId": tid, "url": "file:///etc/passwd"})
    assert blocked["error"]["code"] == "VALIDATION_ERROR"
    assert srv.last is not None
    assert srv.last.returncode != 0

    # focus, claim, release, close
    other = ok(srv, "open_browser_tab", {"url": site.url("/third.html")})["id"]
    assert ok(srv, "focus_browser_tab", {"tabId": tid})["active"] is True
    assert ok(srv, "browser_use_start", {"tabId": other})["ownerId"].startswith("socket:")
    # That `meith call` connection ended, and its claim with it (once the tab was reset).
    wait_for(
        lambda: (
            next(t for t in ok(srv, "get_tabs")["browserTabs"] if t["id"] == other)["ownerId"]
            is None
        )
    )
    assert ok(srv, "browser_use_end", {"tabId": other})["ownerId"] is None
    assert ok(srv, "close_browser_tab", {"tabId": other}) == {"closed": True}
    assert ok(srv, "close_browser_tab", {"tabId": tid}) == {"closed": True}
    assert ok(srv, "close_browser_tab", {"tabId": tid}) == {"closed": False}


def test_a_socket_peer_cannot_hijack_a_claimed_tab(srv: MeithServer, site: Site) -> None:
    a = Client(srv.socket)
    b = Client(srv.socket)
    try:
        tid = a.call_raw("open_browser_tab", {"url": site.url()})["content"]["id"]
        owner = a.call_raw("browser_use_start", {"tabId": tid})["content"]["ownerId"]
        assert owner.startswith("socket:")

        def denied(result: dict[str, Any]) -> None:
            assert result["ok"] is False, result
            assert result["error"]["code"] == "PERMISSION_DENIED", result
            details = result["error"]["details"]
            assert (details["tabId"], details["ownerId"], details["gate"]) == (
                tid,
                owner,
                "ownership",
            )

        denied(b.call_raw("navigate", {"tabId": tid, "url": site.url("/next.html")}))
        denied(b.call_raw("browser_use_end", {"tabId": tid, "force": True}))
        denied(b.call_raw("browser_use_start", {"tabId": tid}))
        named = b.call_raw("navigate", {"tabId": tid, "url": "about:blank", "owner": owner})
        assert named["error"]["code"] == "VALIDATION_ERROR"
        # Claiming to be an agent with A's session id: downgraded to cli, given its own session.
        b._info = {"caller": "agent", "sessionId": owner, "cwd": os.getcwd()}
        denied(b.call_raw("navigate", {"tabId": tid, "url": "about:blank"}))
        denied(b.call_raw("browser_use_end", {"tabId": tid, "force": True}))
        b._info = {"caller": "internal", "sessionId": owner, "cwd": os.getcwd()}
        denied(b.call_raw("browser_use_end", {"tabId": tid, "force": True}))
        denied(srv.call("close_browser_tab", {"tabId": tid}))

        tab = next(t for t in ok(srv, "get_tabs")["browserTabs"] if t["id"] == tid)
        assert tab["ownerId"] == owner
        assert tab["url"] == site.url()
        # The owner still controls it.
        moved = a.call_raw("navigate", {"tabId": tid, "url": site.url("/next.html")})
        assert moved["ok"], moved
    finally:
        a.close()

    def released() -> bool:
        tabs = ok(srv, "get_tabs")["browserTabs"]
        return next(t for t in tabs if t["id"] == tid)["ownerId"] is None

    wait_for(released)
    assert b.call_raw("browser_use_start", {"tabId": tid})["ok"]
    b.close()


def test_popups_permissions_and_downloads_through_the_server(srv: MeithServer, site: Site) -> None:
    tid = ok(srv, "open_browser_tab", {"url": site.url("/popups.html")})["id"]
    before = {t["id"] for t in ok(srv, "get_tabs")["browserTabs"]}
    for name in ("Blank link", "Open window", "Submit to new window"):
        ok(srv, "click_element", {"tabId": tid, "elementId": element(srv, tid, name)})

    def three_blocked() -> bool:
        logs = ok(srv, "get_console_logs", {"tabId": tid})
        return sum(e["text"].startswith(POPUP_LOG_PREFIX) for e in logs) >= 3

    wait_for(three_blocked)
    assert {t["id"] for t in ok(srv, "get_tabs")["browserTabs"]} == before

    ok(srv, "navigate", {"tabId": tid, "url": site.url("/permissions.html")})
    probe = js(srv, tid, "probe()")
    assert probe["query:geolocation"] == probe["query:notifications"] == "denied"
    assert probe["notification"] == "denied"
    assert probe["geolocation"] == "error:1"
    ok(srv, "click_element", {"tabId": tid, "elementId": element(srv, tid, "Download")})

    def refused() -> bool:
        logs = ok(srv, "get_console_logs", {"tabId": tid})
        return any(e["text"].startswith("[meith] Download refused") for e in logs)

    wait_for(refused)
    assert not list(srv.home.root.rglob("report.txt"))


def test_privileged_tools_are_denied_until_approved_and_granted(meith_server, site: Site) -> None:  # type: ignore[no-untyped-def]
    require_browser()
    srv = meith_server()
    assert srv.call("get_tabs")["ok"]  # read-only: no approval or grant needed
    first = srv.call("open_browser_tab", {"url": site.url()})
    assert first["error"]["code"] == "PERMISSION_DENIED"
    assert "meith plugins approve browser" in first["error"]["message"]
    srv.approve("browser")
    second = srv.call("open_browser_tab", {"url": site.url()})
    assert second["error"]["code"] == "PERMISSION_DENIED"
    assert "meith grants add" in second["error"]["message"]
    assert srv.call("get_tabs")["content"]["browserTabs"] == []
    srv.grant("controls-browser", tool="open_browser_tab")
    third = srv.call("open_browser_tab", {"url": site.url()})
    assert third["ok"], third
    assert third["content"]["title"] == "Index"
    # The grant named one tool; the others stay denied.
    other = srv.call("get_browser_state", {"tabId": third["content"]["id"]})
    assert other["error"]["code"] == "PERMISSION_DENIED"
