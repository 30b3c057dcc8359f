"""Safety rules against real Chromium: URL schemes, popups, permissions, downloads, dialogs, CDP."""

from __future__ import annotations

from pathlib import Path

import pytest

from meith_plugins_browser.scripts import POPUP_LOG_PREFIX
from meith_plugins_browser.settings import SECTION
from tests.browser.conftest import Browsing
from tests.browser.support import poll

pytestmark = [pytest.mark.anyio, pytest.mark.browser]

BLOCKED_URLS = [
    "file:///etc/passwd",
    "FILE:///etc/passwd",
    "view-source:http://127.0.0.1/",
    "chrome://settings",
    "chrome-extension://abc/x.html",
    "javascript:alert(1)",
    "  javascript:alert(1)",
    "java\tscript:alert(1)",
    "\x01javascript:alert(1)",
    "about:config",
    "blob:http://127.0.0.1/uuid",
    "devtools://devtools/bundled/inspector.html",
    "ftp://127.0.0.1/",
    "127.0.0.1:8000/index.html",
]


async def tab_ids(browsing: Browsing) -> set[str]:
    return {t["id"] for t in (await browsing.ok("get_tabs"))["browserTabs"]}


async def test_only_http_https_data_and_about_blank_urls_are_opened(browsing: Browsing) -> None:
    tid = (await browsing.open())["id"]
    before = await tab_ids(browsing)
    for url in BLOCKED_URLS:
        await browsing.fails("VALIDATION_ERROR", "open_browser_tab", {"url": url})
        await browsing.fails("VALIDATION_ERROR", "navigate", {"tabId": tid, "url": url})
    assert await tab_ids(browsing) == before
    state = await browsing.state(tid)
    assert state["url"] == browsing.site.url("/index.html")
    err = await browsing.fails("VALIDATION_ERROR", "navigate", {"tabId": tid, "url": "file:///x"})
    assert "browser.extraSchemes" in err["message"]


async def test_a_setting_can_allow_more_schemes(browsing: Browsing, tmp_path: Path) -> None:
    page = tmp_path / "local.html"
    page.write_text("<title>Local file</title>")
    tid = (await browsing.open())["id"]
    browsing.rt.settings.merge({SECTION: {"extraSchemes": ["file"]}})
    try:
        moved = await browsing.ok("navigate", {"tabId": tid, "url": page.as_uri()})
        assert moved["title"] == "Local file"
        await browsing.fails(
            "VALIDATION_ERROR", "navigate", {"tabId": tid, "url": "chrome://version"}
        )
    finally:
        browsing.rt.settings.merge({SECTION: None})
    await browsing.fails("VALIDATION_ERROR", "navigate", {"tabId": tid, "url": page.as_uri()})


async def test_popups_are_blocked_logged_and_never_become_tabs(browsing: Browsing) -> None:
    tid = (await browsing.open("/popups.html"))["id"]
    before = await tab_ids(browsing)
    context = browsing.plugin.host._context
    assert context is not None
    pages_before = len(context.pages)
    state = await browsing.state(tid)
    ids = {e["name"]: e["id"] for e in state["elements"]}
    attempts = [
        "Blank link",
        "Noopener link",
        "Named window link",
        "Open window",
        "Submit to new window",
        "Script submit",
    ]
    for n, name in enumerate(attempts, start=1):
        await browsing.ok("click_element", {"tabId": tid, "elementId": ids[name]})

        async def logged(n: int = n) -> bool:
            logs = await browsing.ok("get_console_logs", {"tabId": tid})
            blocked = [e for e in logs if e["text"].startswith(POPUP_LOG_PREFIX)]
            return len(blocked) >= n

        await poll(logged)
    logs = await browsing.ok("get_console_logs", {"tabId": tid})
    blocked = [e for e in logs if e["text"].startswith(POPUP_LOG_PREFIX)]
    assert all(e["level"] == "warn" for e in blocked)
    assert any("(window.open): /third.html" in e["text"] for e in blocked)
    assert any("(form)" in e["text"] for e in blocked)
    assert await browsing.js(tid, "window.__opened") == "null"
    assert await tab_ids(browsing) == before
    assert len(context.pages) == pages_before
    # The page itself stayed where it was.
    assert (await browsing.state(tid))["url"] == browsing.site.url("/popups.html")


async def test_a_link_into_a_named_frame_of_the_page_still_works(browsing: Browsing) -> None:
    tid = (await browsing.open("/popups.html"))["id"]
    frame_link = await browsing.element(tid, name="Into frame")
    await browsing.ok("click_element", {"tabId": tid, "elementId": frame_link})

    async def framed() -> bool:
        return bool(await browsing.js(tid, "frames[0].location.pathname === '/third.html'"))

    await poll(framed)


async def test_a_scripted_anchor_click_cannot_open_a_window(browsing: Browsing) -> None:
    tid = (await browsing.open("/popups.html"))["id"]
    before = await tab_ids(browsing)
    # A link that is not in the document, clicked by script or by a dispatched event.
    await browsing.js(
        tid,
        "Object.assign(document.createElement('a'), {href: '/third.html', target: '_blank'})"
        ".click()",
    )
    await browsing.js(
        tid,
        "Object.assign(document.createElement('a'), {href: '/third.html', target: '_blank'})"
        ".dispatchEvent(new MouseEvent('click'))",
    )

    async def logged() -> bool:
        logs = await browsing.ok("get_console_logs", {"tabId": tid})
        return sum(e["text"].startswith(POPUP_LOG_PREFIX + " (link)") for e in logs) == 2

    await poll(logged)
    assert await tab_ids(browsing) == before
    context = browsing.plugin.host._context
    assert context is not None
    assert len(context.pages) == len(before)


async def test_a_window_the_host_did_not_open_is_closed(browsing: Browsing) -> None:
    await browsing.open()
    before = await tab_ids(browsing)
    context = browsing.plugin.host._context
    assert context is not None
    pages_before = len(context.pages)
    # Whatever gets past the in-page guard reaches the host as a page it did not ask for.
    escaped = await context.new_page()

    async def closed() -> bool:
        return escaped.is_closed()

    await poll(closed)
    assert len(context.pages) == pages_before
    assert await tab_ids(browsing) == before


async def test_every_permission_request_is_denied(browsing: Browsing) -> None:
    tid = (await browsing.open("/permissions.html"))["id"]
    result = await browsing.js(tid, "probe()")
    for name in ("geolocation", "notifications", "camera", "microphone", "clipboard-read"):
        assert result[f"query:{name}"] == "denied", result
    assert result["notification"] == "denied"
    assert result["geolocation"] == "error:1"  # PERMISSION_DENIED
    assert result["clipboard"] == "error:NotAllowedError"
    assert result["media"] in ("error:NotAllowedError", "error:NotFoundError")


async def test_downloads_are_refused(browsing: Browsing) -> None:
    tid = (await browsing.open("/permissions.html"))["id"]
    link = await browsing.element(tid, name="Download")
    await browsing.ok("click_element", {"tabId": tid, "elementId": link})

    async def refused() -> bool:
        logs = await browsing.ok("get_console_logs", {"tabId": tid})
        return any(e["text"].startswith("[meith] Download refused: ") for e in logs)

    await poll(refused)
    home = browsing.rt.home.root
    assert not list(home.rglob("report.txt"))
    assert not (Path.home() / "Downloads" / "report.txt").exists()


async def test_dialogs_do_not_block_the_tab(browsing: Browsing) -> None:
    tid = (await browsing.open())["id"]
    assert await browsing.js(tid, "alert('hello'); confirm('sure?')") is False
    logs = await browsing.ok("get_console_logs", {"tabId": tid})
    texts = [e["text"] for e in logs]
    assert "[meith] alert dialog dismissed: hello" in texts
    assert "[meith] confirm dialog dismissed: sure?" in texts


async def test_cdp_methods_that_reach_past_the_tab_are_refused(browsing: Browsing) -> None:
    tid = (await browsing.open())["id"]
    refused = [
        ("Browser.close", {}),
        ("Browser.grantPermissions", {"permissions": ["geolocation"]}),
        ("Target.createTarget", {"url": "about:blank"}),
        ("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": "/tmp"}),
        ("DOM.setFileInputFiles", {"files": ["/etc/passwd"], "nodeId": 1}),
        ("Network.loadNetworkResource", {"url": "file:///etc/passwd", "options": {}}),
        ("Security.setIgnoreCertificateErrors", {"ignore": True}),
        ("Fetch.enable", {}),
        ("Page.navigate", {"url": "file:///etc/passwd"}),
    ]
    for method, params in refused:
        code = "PERMISSION_DENIED" if method == "DOM.setFileInputFiles" else "VALIDATION_ERROR"
        await browsing.fails(
            code, "cdp_command", {"tabId": tid, "method": method, "params": params}
        )
    assert browsing.plugin.host.running
    ok = await browsing.ok(
        "cdp_command",
        {
            "tabId": tid,
            "method": "Page.navigate",
            "params": {"url": browsing.site.url("/next.html")},
        },
    )
    assert "frameId" in ok["result"]
