"""The page tools in-process, against real Chromium and the local site: reading a page's state
and acting on it, screenshots, console and network entries, CDP."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tests.browser.conftest import Browsing
from tests.browser.support import decode_png, pixel, poll

pytestmark = [pytest.mark.anyio, pytest.mark.browser]


async def test_get_browser_state_lists_interactive_elements_with_accessible_names(
    browsing: Browsing,
) -> None:
    tid = (await browsing.open())["id"]
    state = await browsing.state(tid)
    assert state["tabId"] == tid
    assert state["url"] == browsing.site.url("/index.html")
    assert state["title"] == "Index"
    assert state["viewport"] == {"width": 1280, "height": 720}
    assert state["truncated"] is False
    els = state["elements"]
    numbers = [int(e["id"].split("-")[1]) for e in els]
    assert numbers == list(range(numbers[0], numbers[0] + len(els)))
    by_name = {e.get("name"): e for e in els}
    link = by_name["Next page"]
    assert (link["tag"], link["role"], link["text"]) == ("a", "link", "Next page")
    assert link["href"] == browsing.site.url("/next.html")
    assert set(link["bounds"]) == {"x", "y", "width", "height"}
    assert link["bounds"]["width"] > 0
    assert by_name["Increment"]["role"] == "button"
    field = by_name["Search"]  # the <label for=q>
    assert (field["tag"], field["role"], field["label"], field["value"]) == (
        "input",
        "textbox",
        "Search the site",
        "",
    )
    assert by_name["Colour"]["role"] == "combobox"
    secret = by_name["Password"]
    assert "value" not in secret
    assert "text" not in secret
    assert by_name["Hidden button"]["hidden"] is True
    assert by_name["Disabled button"]["disabled"] is True
    assert by_name["Div button"]["role"] == "button"
    assert by_name["Go next"]["tag"] == "a"  # named by its image's alt text
    assert all(e["hidden"] is False for e in els if e.get("name") != "Hidden button")


async def test_click_element_changes_the_page(browsing: Browsing) -> None:
    tid = (await browsing.open())["id"]
    inc = await browsing.element(tid, name="Increment")
    assert await browsing.ok("click_element", {"tabId": tid, "elementId": inc}) == {"clicked": inc}
    await browsing.ok("click_element", {"tabId": tid, "elementId": inc})
    assert await browsing.js(tid, "document.getElementById('count').textContent") == "2"
    div = await browsing.element(tid, name="Div button")
    await browsing.ok("click_element", {"tabId": tid, "elementId": div})
    assert await browsing.js(tid, "document.getElementById('divbutton').textContent") == "pressed"


async def test_clicking_a_link_navigates_and_makes_old_ids_stale(browsing: Browsing) -> None:
    tid = (await browsing.open())["id"]
    state = await browsing.state(tid)
    link = next(e["id"] for e in state["elements"] if e.get("name") == "Next page")
    inc = next(e["id"] for e in state["elements"] if e.get("name") == "Increment")
    await browsing.ok("click_element", {"tabId": tid, "elementId": link})
    tabs = {t["id"]: t for t in (await browsing.ok("get_tabs"))["browserTabs"]}
    assert tabs[tid]["url"] == browsing.site.url("/next.html")
    assert tabs[tid]["title"] == "Next"
    stale = await browsing.fails("TOOL_FAILED", "click_element", {"tabId": tid, "elementId": inc})
    assert "stale" in stale["message"]
    assert stale["details"]["reason"] == "stale"
    assert "navigated" in stale["message"]


async def test_ids_are_valid_only_for_the_latest_read(browsing: Browsing) -> None:
    tid = (await browsing.open())["id"]
    first = await browsing.state(tid)
    second = await browsing.state(tid)
    old = next(e["id"] for e in first["elements"] if e.get("name") == "Increment")
    new = next(e["id"] for e in second["elements"] if e.get("name") == "Increment")
    assert old != new
    stale = await browsing.fails("TOOL_FAILED", "click_element", {"tabId": tid, "elementId": old})
    assert "stale" in stale["message"]
    assert "get_browser_state" in stale["message"]
    assert await browsing.js(tid, "document.getElementById('count').textContent") == "0"
    await browsing.ok("click_element", {"tabId": tid, "elementId": new})
    unknown = await browsing.fails(
        "TOOL_FAILED", "click_element", {"tabId": tid, "elementId": "el-9999"}
    )
    assert unknown["details"]["reason"] == "unknown"
    await browsing.fails("TOOL_FAILED", "click_element", {"tabId": tid, "elementId": "button"})


async def test_an_element_replaced_in_place_is_never_clicked_by_the_old_id(
    browsing: Browsing,
) -> None:
    tid = (await browsing.open())["id"]
    inc = await browsing.element(tid, name="Increment")
    # Swap the button for an identical-looking one at the same spot, counting separately.
    await browsing.js(
        tid,
        """(() => { const old = document.getElementById('inc');
        const twin = old.cloneNode(true); twin.id = 'twin';
        twin.onclick = () => { document.getElementById('count').textContent = 'twin'; };
        old.replaceWith(twin); return true; })()""",
    )
    err = await browsing.fails("TOOL_FAILED", "click_element", {"tabId": tid, "elementId": inc})
    assert "no longer in the page" in err["message"]
    assert await browsing.js(tid, "document.getElementById('count').textContent") == "0"


async def test_type_text_replaces_the_value_with_trusted_input_and_change_events(
    browsing: Browsing,
) -> None:
    tid = (await browsing.open())["id"]
    field = await browsing.element(tid, name="Search")
    assert await browsing.ok("type_text", {"tabId": tid, "elementId": field, "text": "hello"}) == {
        "typed": 5
    }
    events = await browsing.js(tid, "document.getElementById('events').textContent")
    assert "input:true" in events
    assert "change:true" in events
    await browsing.ok("type_text", {"tabId": tid, "elementId": field, "text": "bye 👋"})
    assert await browsing.js(tid, "document.getElementById('q').value") == "bye 👋"
    # The field keeps the focus, so Enter submits the form it belongs to.
    await browsing.ok("send_keys", {"tabId": tid, "keys": "Enter"})
    assert await browsing.js(tid, "document.getElementById('submitted').textContent") == "bye 👋"
    state = await browsing.state(tid)
    assert next(e for e in state["elements"] if e.get("name") == "Search")["value"] == "bye 👋"


async def test_type_text_picks_an_option_of_a_select(browsing: Browsing) -> None:
    tid = (await browsing.open())["id"]
    select = await browsing.element(tid, name="Colour")
    await browsing.ok("type_text", {"tabId": tid, "elementId": select, "text": "Green"})
    assert await browsing.js(tid, "document.getElementById('color').value") == "g"
    events = await browsing.js(tid, "document.getElementById('events').textContent")
    assert "select:g" in events
    err = await browsing.fails(
        "TOOL_FAILED", "type_text", {"tabId": tid, "elementId": select, "text": "Blue"}
    )
    assert "no option" in err["message"]
    button = await browsing.element(tid, name="Increment")
    err = await browsing.fails(
        "TOOL_FAILED", "type_text", {"tabId": tid, "elementId": button, "text": "x"}
    )
    assert "cannot take typed text" in err["message"]


async def test_send_keys_presses_named_keys_combinations_and_types_text(
    browsing: Browsing,
) -> None:
    tid = (await browsing.open())["id"]
    field = await browsing.element(tid, name="Search")
    await browsing.ok("type_text", {"tabId": tid, "elementId": field, "text": "ab"})
    await browsing.js(tid, "document.getElementById('keys').textContent = ''")
    for keys in ("ArrowLeft", "Backspace", "xyz", "Home", "Control+a", "Tab", "Escape"):
        assert await browsing.ok("send_keys", {"tabId": tid, "keys": keys}) == {"ok": True}
    assert await browsing.js(tid, "document.getElementById('q').value") == "xyzb"
    log = await browsing.js(tid, "document.getElementById('keys').textContent")
    assert log.split(",")[:-1] == [
        "ArrowLeft", "Backspace", "x", "y", "z", "Home", "Control", "a", "Tab", "Escape",
    ]  # fmt: skip


async def test_scroll_page_relative_and_absolute(browsing: Browsing) -> None:
    tid = (await browsing.open())["id"]
    assert await browsing.ok("scroll_page", {"tabId": tid, "deltaY": 300}) == {
        "ok": True,
        "scrollX": 0,
        "scrollY": 300,
    }
    assert (await browsing.ok("scroll_page", {"tabId": tid, "deltaY": 200}))["scrollY"] == 500
    assert (await browsing.ok("scroll_page", {"tabId": tid, "toY": 100}))["scrollY"] == 100
    assert await browsing.js(tid, "window.scrollY") == 100
    state = await browsing.state(tid)
    assert state["scroll"] == {"x": 0, "y": 100}


async def test_take_screenshot_writes_a_png_of_the_page_under_artifacts(
    browsing: Browsing,
) -> None:
    tid = (await browsing.open())["id"]
    shot = await browsing.ok("take_screenshot", {"tabId": tid})
    path = Path(shot["path"])
    assert path.parent == browsing.rt.home.artifacts_dir
    assert path.name.startswith(f"screenshot-{tid}-")
    assert path.suffix == ".png"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    width, height, channels, rows = decode_png(path.read_bytes(), rows_wanted=60)
    assert (
        (shot["tabId"], shot["width"], shot["height"]) == (tid, width, height) == (tid, 1280, 720)
    )
    assert pixel(rows, channels, 20, 20) == (255, 0, 0)  # the red banner
    assert pixel(rows, channels, 900, 50) == (255, 255, 255)
    assert browsing.events == [
        {"kind": "artifact", "mimeType": "image/png", "name": path.name, "path": str(path)}
    ]
    again = await browsing.ok("take_screenshot", {"tabId": tid})
    assert again["path"] != shot["path"]
    # No tool takes an output path from the caller.
    await browsing.fails(
        "VALIDATION_ERROR", "take_screenshot", {"tabId": tid, "path": "/tmp/elsewhere.png"}
    )


async def test_console_entries_have_the_original_levels_and_fields(browsing: Browsing) -> None:
    tid = (await browsing.open("/console.html"))["id"]

    async def entries():  # type: ignore[no-untyped-def]
        logs = await browsing.ok("get_console_logs", {"tabId": tid})
        return logs if any("boom" in e["text"] for e in logs) and len(logs) >= 8 else None

    logs = await poll(entries)
    by_text = {e["text"]: e for e in logs}
    assert by_text["informative"]["level"] == "info"
    assert by_text["careful"]["level"] == "warn"
    assert by_text["broken"]["level"] == "error"
    assert by_text["details"]["level"] == "debug"
    assert any(e["level"] == "error" and "assertion" in e["text"] for e in logs)
    plain = next(e for e in logs if e["text"].startswith("plain 1"))
    assert plain["level"] == "log"
    assert plain["source"] == browsing.site.url("/console.html")
    assert any(e["level"] == "error" and e["text"] == "Uncaught Error: boom" for e in logs)
    missing = next(e for e in logs if "404" in e["text"])
    assert missing["level"] == "error"
    assert missing["source"].endswith("/status/404")
    assert all(isinstance(e["ts"], int) for e in logs)
    assert [e["ts"] for e in logs] == sorted(e["ts"] for e in logs)
    last_two = await browsing.ok("get_console_logs", {"tabId": tid, "limit": 2})
    assert last_two == (await browsing.ok("get_console_logs", {"tabId": tid}))[-2:]
    await browsing.fails("VALIDATION_ERROR", "get_console_logs", {"tabId": tid, "limit": 0})


async def test_network_entries_record_status_type_timing_and_failures(browsing: Browsing) -> None:
    tid = (await browsing.open("/console.html"))["id"]

    async def entries():  # type: ignore[no-untyped-def]
        logs = await browsing.ok("get_network_logs", {"tabId": tid})
        done = [e for e in logs if "endedAt" in e]
        return logs if len(done) >= 4 else None

    logs = await poll(entries)
    assert [e["id"] for e in logs] == [f"net-{i}" for i in range(1, len(logs) + 1)]
    doc = logs[0]
    assert doc["url"] == browsing.site.url("/console.html")
    assert (doc["method"], doc["status"], doc["resourceType"], doc["failed"]) == (
        "GET",
        200,
        "document",
        False,
    )
    assert doc["endedAt"] >= doc["startedAt"]
    assert doc["durationMs"] >= 0
    missing = next(e for e in logs if e["url"].endswith("/status/404"))
    assert (missing["status"], missing["resourceType"], missing["failed"]) == (404, "fetch", False)
    refused = next(e for e in logs if e["url"].startswith("http://127.0.0.1:9/"))
    assert refused["failed"] is True
    assert "ERR_" in refused["errorText"]
    image = next(e for e in logs if e["url"].endswith("/pixel.png"))
    assert image["resourceType"] == "image"
    assert image["status"] == 200
    assert len(await browsing.ok("get_network_logs", {"tabId": tid, "limit": 1})) == 1


async def test_cdp_command_runs_a_method_on_the_tab(browsing: Browsing) -> None:
    tid = (await browsing.open())["id"]
    out = await browsing.ok(
        "cdp_command",
        {"tabId": tid, "method": "Runtime.evaluate", "params": {"expression": "6 * 7"}},
    )
    assert out["tabId"] == tid
    assert out["method"] == "Runtime.evaluate"
    assert out["result"]["result"]["value"] == 42
    history = await browsing.ok(
        "cdp_command", {"tabId": tid, "method": "Page.getNavigationHistory"}
    )
    assert history["result"]["entries"][-1]["url"] == browsing.site.url("/index.html")
    err = await browsing.fails(
        "VALIDATION_ERROR", "cdp_command", {"tabId": tid, "method": "Nothing.here"}
    )
    assert "Nothing.here" in err["message"]
