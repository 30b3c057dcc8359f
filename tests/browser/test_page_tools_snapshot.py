"""get_browser_state's snapshot: the page as a model reads it, in real Chromium."""

from __future__ import annotations

import pytest

from tests.browser.conftest import Browsing

pytestmark = [pytest.mark.anyio, pytest.mark.browser]


async def _result(browsing: Browsing, tab_id: str):  # type: ignore[no-untyped-def]
    result = await browsing.call("get_browser_state", {"tabId": tab_id})
    assert result.ok, result.to_wire()
    return result


async def test_the_snapshot_shows_what_a_click_changed(browsing: Browsing) -> None:
    tab = await browsing.open("/index.html")
    before = await _result(browsing, tab["id"])
    inc = next(e["id"] for e in before.content["elements"] if e.get("name") == "Increment")
    assert f'- button "Increment" [ref={inc}]' in before.content["snapshot"]
    assert 'Increment" [ref=' in before.text
    assert f'button "Increment" [ref={inc}]' in before.text
    await browsing.ok("click_element", {"tabId": tab["id"], "elementId": inc})
    after = await _result(browsing, tab["id"])
    # The count the click changed is in the text a model reads, next to the button.
    assert "Increment" in after.text
    line = next(x for x in after.content["snapshot"].splitlines() if "Increment" in x)
    rest = after.content["snapshot"].split(line, 1)[1]
    assert rest.lstrip().startswith("- text: 1")


async def test_the_snapshot_hides_what_the_page_hides_and_never_shows_a_password(
    browsing: Browsing,
) -> None:
    tab = await browsing.open("/index.html")
    snapshot = (await _result(browsing, tab["id"])).content["snapshot"]
    assert "Hidden button" not in snapshot  # display:none
    assert "hunter2" not in snapshot
    assert '- textbox "Password" [ref=' in snapshot
    assert "[disabled]" in next(x for x in snapshot.splitlines() if "Disabled button" in x)
    assert '- link "Next page" [ref=' in snapshot
    assert "-> /next.html" in snapshot
    assert '- link "Go next" [ref=' in snapshot  # named by its image's alt


async def test_a_typed_value_shows_in_the_snapshot(browsing: Browsing) -> None:
    tab = await browsing.open("/index.html")
    q = await browsing.element(tab["id"], name="Search")
    await browsing.ok("type_text", {"tabId": tab["id"], "elementId": q, "text": "needle"})
    snapshot = (await _result(browsing, tab["id"])).content["snapshot"]
    assert '- textbox "Search" [ref=' in snapshot
    assert ': "needle"' in next(x for x in snapshot.splitlines() if '"Search" [ref=' in x)


async def test_the_text_is_far_smaller_than_the_structured_state(browsing: Browsing) -> None:
    import json

    tab = await browsing.open("/index.html")
    result = await _result(browsing, tab["id"])
    assert result.text.splitlines()[0].startswith(f"tab {tab['id']}: Index <")
    assert len(result.text) < len(json.dumps(result.content)) / 2
