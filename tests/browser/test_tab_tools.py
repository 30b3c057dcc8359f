"""The tab tools in-process, against real Chromium and the local site: opening, navigating,
focusing and closing tabs, a page that fails to load, unknown tabs."""

from __future__ import annotations

import re
import socket

import pytest

from tests.browser.conftest import Browsing

pytestmark = [pytest.mark.anyio, pytest.mark.browser]


async def test_open_browser_tab_returns_a_loaded_active_tab(browsing: Browsing) -> None:
    first = await browsing.open("/next.html")
    tab = await browsing.open("/index.html", title="My index")
    assert re.fullmatch(r"btab_[0-9a-f]{12}", tab["id"])
    assert tab["url"] == browsing.site.url("/index.html")
    assert tab["title"] == "Index"
    assert tab["active"] is True
    assert tab["ownerId"] is None
    assert tab["mode"] == "web"
    listed = await browsing.ok("get_tabs")
    assert listed["workspaceTabs"] == []
    by_id = {t["id"]: t for t in listed["browserTabs"]}
    assert by_id[tab["id"]]["active"] is True
    assert by_id[first["id"]]["active"] is False
    active = await browsing.ok("get_active_tab")
    assert active["id"] == tab["id"]


async def test_navigate_go_back_go_forward_and_refresh(browsing: Browsing) -> None:
    tab = await browsing.open()
    tid = tab["id"]
    moved = await browsing.ok("navigate", {"tabId": tid, "url": browsing.site.url("/next.html")})
    assert (moved["title"], moved["loadState"]) == ("Next", "ready")
    back = await browsing.ok("go_back", {"tabId": tid})
    assert back["url"] == browsing.site.url("/index.html")
    assert back["title"] == "Index"
    forward = await browsing.ok("go_forward", {"tabId": tid})
    assert forward["url"] == browsing.site.url("/next.html")
    await browsing.ok("go_back", {"tabId": tid})
    inc = await browsing.element(tid, name="Increment")
    await browsing.ok("click_element", {"tabId": tid, "elementId": inc})
    assert await browsing.js(tid, "document.getElementById('count').textContent") == "1"
    refreshed = await browsing.ok("refresh", {"tabId": tid})
    assert refreshed["url"] == browsing.site.url("/index.html")
    assert await browsing.js(tid, "document.getElementById('count').textContent") == "0"


async def test_focus_and_close_reactivate_tabs_of_the_space(browsing: Browsing) -> None:
    space = "space_focus"
    a = await browsing.open(spaceId=space)
    b = await browsing.open("/next.html", spaceId=space)
    assert (await browsing.ok("get_active_tab", {"spaceId": space}))["id"] == b["id"]
    focused = await browsing.ok("focus_browser_tab", {"tabId": a["id"]})
    assert focused["active"] is True
    assert (await browsing.ok("get_active_tab", {"spaceId": space}))["id"] == a["id"]
    assert await browsing.ok("close_browser_tab", {"tabId": a["id"]}) == {"closed": True}
    assert (await browsing.ok("get_active_tab", {"spaceId": space}))["id"] == b["id"]
    listed = await browsing.ok("get_tabs", {"spaceId": space})
    assert [t["id"] for t in listed["browserTabs"]] == [b["id"]]
    assert await browsing.ok("close_browser_tab", {"tabId": a["id"]}) == {"closed": False}
    err = await browsing.fails("TOOL_FAILED", "navigate", {"tabId": a["id"], "url": "about:blank"})
    assert err["message"] == f"Unknown browser tab: {a['id']}"
    await browsing.ok("close_browser_tab", {"tabId": b["id"]})
    assert await browsing.ok("get_active_tab", {"spaceId": space}) is None


async def test_a_page_that_fails_to_load_leaves_an_error_tab(browsing: Browsing) -> None:
    tid = (await browsing.open())["id"]
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/"
    result = await browsing.call("navigate", {"tabId": tid, "url": url})
    assert result.ok
    assert result.content["loadState"] == "error"
    assert result.content["url"] == url
    assert "ERR_CONNECTION_REFUSED" in result.content["error"]
    assert result.diagnostics
    assert result.diagnostics[0].level == "error"
    back = await browsing.ok("go_back", {"tabId": tid})
    assert back["url"] == browsing.site.url("/index.html")
    assert back["loadState"] == "ready"


async def test_data_and_about_blank_urls_open(browsing: Browsing) -> None:
    tab = await browsing.ok("open_browser_tab", {"url": "data:text/html,<title>Inline</title><p>x"})
    assert tab["title"] == "Inline"
    assert tab["loadState"] == "ready"
    blank = await browsing.ok("navigate", {"tabId": tab["id"], "url": "about:blank"})
    assert blank["url"] == "about:blank"


async def test_unknown_tabs_are_tool_failed(browsing: Browsing) -> None:
    for tool in ("navigate", "get_browser_state", "take_screenshot", "get_console_logs"):
        args = {"tabId": "btab_000000000000"}
        if tool == "navigate":
            args["url"] = "about:blank"
        err = await browsing.fails("TOOL_FAILED", tool, args)
        assert err["message"] == "Unknown browser tab: btab_000000000000"
