"""Tab claims and ownership, in-process with real sessions (the socket side is in the e2e tests)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from meith_core import CallerInfo, CallerKind
from tests.browser.conftest import Browsing
from tests.browser.support import owned

pytestmark = [pytest.mark.anyio, pytest.mark.browser]


def agent(browsing: Browsing) -> CallerInfo:
    session = browsing.rt.open_session("agent")
    browsing.rt.grant(session, ["controls-browser"])
    return session


async def test_agents_must_claim_before_controlling(browsing: Browsing) -> None:
    tid = (await browsing.open())["id"]
    a = agent(browsing)
    denied = await browsing.fails(
        "PERMISSION_DENIED", "navigate", {"tabId": tid, "url": "about:blank"}, a
    )
    assert denied["message"] == f"Tab {tid} must be claimed via browser_use_start before control"
    assert denied["details"] == {"tabId": tid, "reason": "claim_required", "gate": "claim"}
    claimed = await browsing.ok("browser_use_start", {"tabId": tid}, a)
    assert claimed["ownerId"] == a.session_id
    # Claiming again is idempotent; now the agent controls the tab.
    await browsing.ok("browser_use_start", {"tabId": tid}, a)
    moved = await browsing.ok("navigate", {"tabId": tid, "url": browsing.site.url("/next.html")}, a)
    assert moved["ownerId"] == a.session_id
    assert moved["title"] == "Next"


async def test_another_owner_cannot_control_claim_or_release(browsing: Browsing) -> None:
    tid = (await browsing.open())["id"]
    a, b = agent(browsing), agent(browsing)
    await browsing.ok("browser_use_start", {"tabId": tid}, a)
    cli = browsing.rt.open_session("cli")
    browsing.rt.grant(cli, ["controls-browser"])
    guarded = [
        ("navigate", {"url": "about:blank"}),
        ("go_back", {}),
        ("go_forward", {}),
        ("refresh", {}),
        ("scroll_page", {"deltaY": 10}),
        ("send_keys", {"keys": "Enter"}),
        ("click_element", {"elementId": "el-0"}),
        ("type_text", {"elementId": "el-0", "text": "x"}),
        ("cdp_command", {"method": "Runtime.evaluate", "params": {"expression": "1"}}),
        ("close_browser_tab", {}),
        ("browser_use_start", {}),
        ("browser_use_end", {}),
        ("browser_use_end", {"force": True}),
    ]
    for intruder in (b, cli):
        for tool, extra in guarded:
            denied = await browsing.fails(
                "PERMISSION_DENIED", tool, {"tabId": tid, **extra}, intruder
            )
            assert denied["message"].startswith(f"Tab {tid} belongs to owner {a.session_id}")
            assert "open a tab of your own with open_browser_tab" in denied["message"]
            assert owned(denied["details"]) == {"tabId": tid, "ownerId": a.session_id}
    tab = next(t for t in (await browsing.ok("get_tabs"))["browserTabs"] if t["id"] == tid)
    assert tab["ownerId"] == a.session_id
    assert tab["url"] == browsing.site.url("/index.html")
    # Reading is private to the owner too; the local user may still look.
    reads = (
        "get_browser_state",
        "take_screenshot",
        "get_console_logs",
        "get_network_logs",
        "focus_browser_tab",
    )
    for tool in reads:
        denied = await browsing.fails("PERMISSION_DENIED", tool, {"tabId": tid}, b)
        assert owned(denied["details"]) == {"tabId": tid, "ownerId": a.session_id}
        await browsing.ok(tool, {"tabId": tid}, cli)
    listed = next(
        t for t in (await browsing.ok("get_tabs", {}, b))["browserTabs"] if t["id"] == tid
    )
    assert (listed["ownerId"], listed["url"], listed["title"]) == (a.session_id, None, None)


async def test_arguments_cannot_name_an_owner(browsing: Browsing) -> None:
    tid = (await browsing.open())["id"]
    a, b = agent(browsing), agent(browsing)
    await browsing.ok("browser_use_start", {"tabId": tid}, a)
    err = await browsing.fails(
        "VALIDATION_ERROR",
        "navigate",
        {"tabId": tid, "url": "about:blank", "owner": a.session_id},
        b,
    )
    assert "owner" in err["message"]


async def test_owner_releases_and_only_internal_can_force(browsing: Browsing) -> None:
    tid = (await browsing.open())["id"]
    a, b = agent(browsing), agent(browsing)
    await browsing.ok("browser_use_start", {"tabId": tid}, a)
    released = await browsing.ok("browser_use_end", {"tabId": tid}, a)
    assert released["ownerId"] is None
    # Releasing an unclaimed tab is allowed.
    assert (await browsing.ok("browser_use_end", {"tabId": tid}, b))["ownerId"] is None
    await browsing.ok("browser_use_start", {"tabId": tid}, b)
    forced = await browsing.ok("browser_use_end", {"tabId": tid, "force": True})  # internal
    assert forced["ownerId"] is None


async def test_interactive_callers_control_unclaimed_tabs(browsing: Browsing) -> None:
    tid = (await browsing.open())["id"]
    cli = browsing.rt.open_session("cli")
    browsing.rt.grant(cli, ["controls-browser"])
    await browsing.ok("scroll_page", {"tabId": tid, "deltaY": 50}, cli)
    renderer = CallerInfo(caller=CallerKind.RENDERER)
    await browsing.ok("scroll_page", {"tabId": tid, "deltaY": 50}, renderer)
    claimed = await browsing.ok("browser_use_start", {"tabId": tid}, cli)
    assert claimed["ownerId"] == cli.session_id


async def test_a_session_ending_releases_its_claims(browsing: Browsing) -> None:
    one = (await browsing.open())["id"]
    two = (await browsing.open())["id"]
    a, b = agent(browsing), agent(browsing)
    await browsing.ok("browser_use_start", {"tabId": one}, a)
    await browsing.ok("browser_use_start", {"tabId": two}, b)
    await browsing.rt.close_session(a)
    tabs = {t["id"]: t for t in (await browsing.ok("get_tabs"))["browserTabs"]}
    assert tabs[one]["ownerId"] is None
    assert tabs[two]["ownerId"] == b.session_id
    # The ended session's grants went with it.
    await browsing.fails("PERMISSION_DENIED", "browser_use_start", {"tabId": one}, a)


async def test_a_session_ending_closes_the_tabs_it_opened_but_not_the_detached_one(
    browsing: Browsing,
) -> None:
    a = agent(browsing)
    opened = await browsing.ok("open_browser_tab", {"url": browsing.site.url()}, a)
    result = await browsing.call(
        "open_browser_tab", {"url": browsing.site.url("/next.html"), "detach": True}, a
    )
    assert result.ok, result.to_wire()
    kept = result.content
    assert kept["detached"] is True
    assert "detached" not in opened
    assert "handed to the local user" in json.dumps(result.to_wire()["diagnostics"])
    owned = {o["id"]: o for s in browsing.rt.list_sessions() for o in s["owns"]}
    assert owned[opened["id"]]["detached"] is False
    assert owned[kept["id"]]["detached"] is True
    await browsing.rt.close_session(a)
    tabs = {t["id"]: t for t in (await browsing.ok("get_tabs"))["browserTabs"]}
    assert opened["id"] not in tabs
    # Handed over as it was: open, unclaimed, on the page the agent left it on.
    assert tabs[kept["id"]]["ownerId"] is None
    assert tabs[kept["id"]]["url"] == browsing.site.url("/next.html")


async def test_element_ids_are_per_session(browsing: Browsing) -> None:
    tid = (await browsing.open())["id"]
    a = agent(browsing)
    await browsing.ok("browser_use_start", {"tabId": tid}, a)
    state = await browsing.ok("get_browser_state", {"tabId": tid}, a)
    inc = next(e["id"] for e in state["elements"] if e.get("name") == "Increment")
    cli = browsing.rt.open_session("cli")
    browsing.rt.grant(cli, ["controls-browser"])
    await browsing.ok("get_browser_state", {"tabId": tid}, cli)  # the user looks meanwhile
    assert await browsing.ok("click_element", {"tabId": tid, "elementId": inc}, a) == {
        "clicked": inc
    }
    # A navigation still makes every session's ids stale.
    await browsing.ok("navigate", {"tabId": tid, "url": browsing.site.url()}, a)
    stale = await browsing.fails(
        "TOOL_FAILED", "click_element", {"tabId": tid, "elementId": inc}, a
    )
    assert stale["details"]["reason"] == "stale"


async def test_an_agent_owns_the_tabs_it_opens(browsing: Browsing) -> None:
    a, b = agent(browsing), agent(browsing)
    tab = await browsing.ok("open_browser_tab", {"url": browsing.site.url()}, a)
    assert tab["ownerId"] == a.session_id
    await browsing.fails("PERMISSION_DENIED", "get_browser_state", {"tabId": tab["id"]}, b)
    await browsing.ok("scroll_page", {"tabId": tab["id"], "deltaY": 10}, a)


async def test_a_released_tab_keeps_nothing_of_its_claim(browsing: Browsing) -> None:
    a, b = agent(browsing), agent(browsing)
    tid = (await browsing.ok("open_browser_tab", {"url": browsing.site.url("/console.html")}, a))[
        "id"
    ]
    await browsing.ok("navigate", {"tabId": tid, "url": browsing.site.url("/next.html?t=1")}, a)
    assert await browsing.ok("get_console_logs", {"tabId": tid}, a)
    released = await browsing.ok("browser_use_end", {"tabId": tid}, a)
    assert (released["url"], released["ownerId"]) == ("about:blank", None)
    await browsing.ok("browser_use_start", {"tabId": tid}, b)
    assert await browsing.ok("get_console_logs", {"tabId": tid}, b) == []
    assert await browsing.ok("get_network_logs", {"tabId": tid}, b) == []
    history = await browsing.ok(
        "cdp_command", {"tabId": tid, "method": "Page.getNavigationHistory"}, b
    )
    assert [e["url"] for e in history["result"]["entries"]] == ["about:blank"]


async def test_files_reach_a_page_only_from_the_grant_scope(
    browsing: Browsing, tmp_path: Path
) -> None:
    scope = tmp_path / "project"
    scope.mkdir()
    (scope / "notes.txt").write_text("shared on purpose")
    (tmp_path / "secret.txt").write_text("not granted")
    a = browsing.rt.open_session("agent", cwd=str(scope))
    browsing.rt.grant(a, ["controls-browser"], cwd_prefix=str(scope))
    tid = (await browsing.ok("open_browser_tab", {"url": browsing.site.url("/files.html")}, a))[
        "id"
    ]

    def drop(path: Path) -> list[dict[str, Any]]:
        return [
            {
                "tabId": tid,
                "method": "Input.dispatchDragEvent",
                "params": {
                    "type": kind,
                    "x": 50,
                    "y": 50,
                    "data": {"items": [], "files": [str(path)], "dragOperationsMask": 1},
                },
            }
            for kind in ("dragEnter", "dragOver", "drop")
        ]

    for args in drop(tmp_path / "secret.txt"):
        denied = await browsing.fails("PERMISSION_DENIED", "cdp_command", args, a)
        assert denied["details"]["reason"] == "outside grant scope"
    for args in drop(scope / "notes.txt"):
        await browsing.ok("cdp_command", args, a)
    received = await browsing.ok(
        "cdp_command",
        {
            "tabId": tid,
            "method": "Runtime.evaluate",
            "params": {
                "expression": "new Promise((r) => { const t = () => window.received.length "
                "? r(window.received) : setTimeout(t, 20); t(); })",
                "awaitPromise": True,
                "returnByValue": True,
            },
        },
        a,
    )
    assert received["result"]["result"]["value"] == [
        {"name": "notes.txt", "text": "shared on purpose"}
    ]


async def test_claiming_a_tab_drops_what_others_injected_while_it_was_open(
    browsing: Browsing,
) -> None:
    cli = browsing.rt.open_session("cli")
    browsing.rt.grant(cli, ["controls-browser"])
    tid = (await browsing.open())["id"]
    spy = "window.__spy = []; addEventListener('input', (e) => __spy.push(e.target.value), true);"
    for method, params in (
        ("Page.enable", {}),
        ("Page.addScriptToEvaluateOnNewDocument", {"source": spy}),
    ):
        await browsing.ok("cdp_command", {"tabId": tid, "method": method, "params": params}, cli)
    await browsing.ok("refresh", {"tabId": tid}, cli)
    assert await browsing.js(tid, "typeof window.__spy") == "object"  # it works unclaimed
    a = agent(browsing)
    await browsing.ok("browser_use_start", {"tabId": tid}, a)
    await browsing.ok("navigate", {"tabId": tid, "url": browsing.site.url()}, a)
    state = await browsing.ok("get_browser_state", {"tabId": tid}, a)
    field = next(e["id"] for e in state["elements"] if e.get("name") == "Search")
    await browsing.ok("type_text", {"tabId": tid, "elementId": field, "text": "hunter2"}, a)
    seen = await browsing.ok(
        "cdp_command",
        {
            "tabId": tid,
            "method": "Runtime.evaluate",
            "params": {"expression": "typeof window.__spy", "returnByValue": True},
        },
        a,
    )
    assert seen["result"]["result"]["value"] == "undefined"
