"""Walls between sessions on one browser, end to end: a real `meith serve`, two socket
connections (two sessions), real Chromium. Each test replays an attack that worked before the
wall was built."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from meith_core.client import Client
from tests.browser.support import Site, owned, require_browser, wait_for
from tests.harness import MeithServer

pytestmark = pytest.mark.browser

#: What a hostile session leaves behind: a script run in every new document of the tab that
#: records (and would send away) whatever is typed there.
SPY = (
    "window.__spy = [];"
    "document.addEventListener('input', (e) => {"
    "  window.__spy.push(e.target.value); navigator.sendBeacon('/exfil', e.target.value);"
    "}, true);"
)


@pytest.fixture(scope="module")
def srv(site: Site, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MeithServer]:
    """One `meith serve` for the module; browser approved, cli and agents granted (not
    confined)."""
    require_browser()
    server = MeithServer(tmp_path_factory.mktemp("walls") / "home")
    try:
        server.approve("browser")
        server.grant("controls-browser")
        server.grant("controls-browser", caller="agent")
        yield server
    finally:
        server.stop()


def ok(client: Client, tool: str, args: dict[str, Any]) -> Any:
    result = client.call_raw(tool, args)
    assert result["ok"], result
    return result["content"]


def js(client: Client, tab_id: str, expression: str) -> Any:
    out = ok(
        client,
        "cdp_command",
        {
            "tabId": tab_id,
            "method": "Runtime.evaluate",
            "params": {"expression": expression, "returnByValue": True, "awaitPromise": True},
        },
    )
    return out["result"]["result"].get("value")


def inject(client: Client, tab_id: str) -> None:
    ok(client, "cdp_command", {"tabId": tab_id, "method": "Page.enable"})
    ok(
        client,
        "cdp_command",
        {
            "tabId": tab_id,
            "method": "Page.addScriptToEvaluateOnNewDocument",
            "params": {"source": SPY},
        },
    )


def type_secret(client: Client, site: Site, tab_id: str) -> None:
    """Load a fresh document and type a secret into its search field."""
    ok(client, "navigate", {"tabId": tab_id, "url": site.url()})
    state = ok(client, "get_browser_state", {"tabId": tab_id})
    field = next(e["id"] for e in state["elements"] if e.get("name") == "Search")
    ok(client, "type_text", {"tabId": tab_id, "elementId": field, "text": "hunter2"})


def spied(client: Client, tab_id: str) -> Any:
    return json.loads(js(client, tab_id, "JSON.stringify(window.__spy ?? null)"))


def owner_of(srv: MeithServer, tab_id: str) -> Any:
    envelope = srv.call("get_tabs")
    return next(t for t in envelope["content"]["browserTabs"] if t["id"] == tab_id)["ownerId"]


def test_a_script_injected_over_cdp_is_gone_after_browser_use_end(
    srv: MeithServer, site: Site
) -> None:
    with Client(srv.socket) as a, Client(srv.socket) as b:
        tid = ok(a, "open_browser_tab", {"url": site.url()})["id"]
        ok(a, "browser_use_start", {"tabId": tid})
        inject(a, tid)
        type_secret(a, site, tid)
        assert spied(a, tid) == ["hunter2"]  # the injection works while its session holds the tab
        ok(a, "browser_use_end", {"tabId": tid})

        ok(b, "browser_use_start", {"tabId": tid})
        type_secret(b, site, tid)
        assert spied(b, tid) is None
        ok(b, "close_browser_tab", {"tabId": tid})


def test_a_script_injected_over_cdp_is_gone_when_its_session_ends(
    srv: MeithServer, site: Site
) -> None:
    b = Client(srv.socket)
    with Client(srv.socket) as a:
        tid = ok(a, "open_browser_tab", {"url": site.url()})["id"]
        ok(a, "browser_use_start", {"tabId": tid})
        inject(a, tid)
    wait_for(lambda: owner_of(srv, tid) is None)
    with b:
        ok(b, "browser_use_start", {"tabId": tid})
        type_secret(b, site, tid)
        assert spied(b, tid) is None
        ok(b, "close_browser_tab", {"tabId": tid})


def test_a_claimed_tab_is_private_for_reads(srv: MeithServer, site: Site) -> None:
    with Client(srv.socket) as a, Client(srv.socket, caller="plugin") as peer:
        tid = ok(a, "open_browser_tab", {"url": site.url("/console.html?token=s3cret")})["id"]
        owner = ok(a, "browser_use_start", {"tabId": tid})["ownerId"]
        for tool in ("get_console_logs", "get_network_logs"):
            denied = peer.call_raw(tool, {"tabId": tid})
            assert denied["ok"] is False, denied
            assert denied["error"]["code"] == "PERMISSION_DENIED", denied
            assert owned(denied["error"]["details"]) == {"tabId": tid, "ownerId": owner}
        listed = next(t for t in ok(peer, "get_tabs", {})["browserTabs"] if t["id"] == tid)
        assert listed["ownerId"] == owner
        assert "s3cret" not in json.dumps(listed)
        # The owner, and the local user, still see it.
        assert ok(a, "get_console_logs", {"tabId": tid})
        assert "s3cret" in json.dumps(srv.call("get_tabs")["content"])
        ok(a, "close_browser_tab", {"tabId": tid})


def test_dragged_files_outside_any_grant_scope_are_refused(
    srv: MeithServer, site: Site, tmp_path: Path
) -> None:
    secret = tmp_path / "id_rsa"
    secret.write_text("PRIVATE KEY")
    with Client(srv.socket) as a:
        tid = ok(a, "open_browser_tab", {"url": site.url("/files.html")})["id"]
        drops = []
        for kind in ("dragEnter", "dragOver", "drop"):
            drops.append(
                a.call_raw(
                    "cdp_command",
                    {
                        "tabId": tid,
                        "method": "Input.dispatchDragEvent",
                        "params": {
                            "type": kind,
                            "x": 50,
                            "y": 50,
                            "data": {"items": [], "files": [str(secret)], "dragOperationsMask": 1},
                        },
                    },
                )
            )
        for result in drops:
            assert result["ok"] is False, result
            assert result["error"]["code"] == "PERMISSION_DENIED", result
        assert js(a, tid, "window.received") == []
        ok(a, "close_browser_tab", {"tabId": tid})


def test_one_agent_cannot_read_another_agents_tab(srv: MeithServer, site: Site) -> None:
    with Client(srv.socket, caller="agent") as a, Client(srv.socket, caller="agent") as b:
        tab = ok(a, "open_browser_tab", {"url": site.url("/console.html?token=s3cret")})
        tid, owner = tab["id"], tab["ownerId"]
        assert owner is not None  # an agent's new tab is its own at once
        for tool in (
            "get_browser_state",
            "take_screenshot",
            "get_console_logs",
            "get_network_logs",
            "focus_browser_tab",
        ):
            denied = b.call_raw(tool, {"tabId": tid})
            assert denied["ok"] is False, (tool, denied)
            assert denied["error"]["code"] == "PERMISSION_DENIED", (tool, denied)
            assert owned(denied["error"]["details"]) == {"tabId": tid, "ownerId": owner}
        listed = next(t for t in ok(b, "get_tabs", {})["browserTabs"] if t["id"] == tid)
        assert "s3cret" not in json.dumps(listed)
        assert ok(a, "get_browser_state", {"tabId": tid})["url"].endswith("token=s3cret")
        # The local user may look, not act.
        assert srv.call("take_screenshot", {"tabId": tid})["ok"]
        assert srv.call("scroll_page", {"tabId": tid, "deltaY": 5})["error"]["code"] == (
            "PERMISSION_DENIED"
        )
        ok(a, "close_browser_tab", {"tabId": tid})
