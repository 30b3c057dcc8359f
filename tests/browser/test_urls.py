"""The browser plugin's pure parts: no browser needed."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from meith_core import CallerInfo, CallerKind, ErrorCode, ToolError
from meith_plugins_browser.artifacts import png_size, write_artifact
from meith_plugins_browser.cdp import CdpScope, check_cdp
from meith_plugins_browser.elements import ElementIds
from meith_plugins_browser.errors import playwright_message
from meith_plugins_browser.executable import (
    ENV_VAR,
    INSTALL_HINT,
    LAUNCH_ARGS,
    BrowserNotFoundError,
    find_browser,
)
from meith_plugins_browser.keys import parse_keys
from meith_plugins_browser.launch import use_sandbox
from meith_plugins_browser.logs import ConsoleLog, NetworkLog, console_level
from meith_plugins_browser.ownership import (
    Access,
    Controller,
    check_access,
    check_release,
    claim,
)
from meith_plugins_browser.plugin import Plugin
from meith_plugins_browser.settings import BrowserSettings, browser_settings
from meith_plugins_browser.tabs import TabStore
from meith_plugins_browser.urls import check_url
from tests.browser.support import decode_png, make_png

# -- URLs -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1:3000/x", "http://127.0.0.1:3000/x"),
        ("HTTPS://example.com", "HTTPS://example.com"),
        ("  http://example.com/\n", "http://example.com/"),
        ("about:blank", "about:blank"),
        ("about:blank#top", "about:blank#top"),
        ("data:text/html,<p>hi", "data:text/html,<p>hi"),
    ],
)
def test_allowed_urls_come_back_cleaned(url: str, expected: str) -> None:
    assert check_url(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "view-source:http://x/",
        "chrome://settings",
        "javascript:alert(1)",
        " \x00javascript:alert(1)",
        "jav\nascript:alert(1)",
        "about:version",
        "blob:http://x/y",
        "ws://x/",
        "localhost:3000",
        "example.com",
        "http://",
        "http:///path",
        "http://[::1",
    ],
)
def test_other_urls_are_validation_errors(url: str) -> None:
    with pytest.raises(ToolError) as err:
        check_url(url)
    assert err.value.code is ErrorCode.VALIDATION_ERROR


def test_extra_schemes_widen_the_policy() -> None:
    assert check_url("file:///tmp/x.html", ["file"]) == "file:///tmp/x.html"
    assert check_url("about:version", ["about"]) == "about:version"
    with pytest.raises(ToolError):
        check_url("chrome://settings", ["file"])


# -- finding a browser -------------------------------------------------------------------


def _exe(path: Path) -> str:
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return str(path)


def test_the_variable_then_playwright_then_path(tmp_path: Path) -> None:
    env_exe = _exe(tmp_path / "env-chrome")
    pw_exe = _exe(tmp_path / "pw-chrome")
    on_path = {"chromium": "/usr/bin/chromium"}
    found = find_browser(env={ENV_VAR: env_exe}, playwright_path=pw_exe, which=on_path.get)
    assert (found.path, found.source) == (env_exe, "env")
    found = find_browser(env={}, playwright_path=pw_exe, which=on_path.get)
    assert (found.path, found.source) == (pw_exe, "playwright")
    found = find_browser(env={}, playwright_path=str(tmp_path / "missing"), which=on_path.get)
    assert (found.path, found.source) == ("/usr/bin/chromium", "path")
    chrome_only = {"google-chrome": "/opt/chrome"}
    assert find_browser(env={}, playwright_path=None, which=chrome_only.get).path == "/opt/chrome"


def test_no_browser_says_how_to_install_one(tmp_path: Path) -> None:
    with pytest.raises(BrowserNotFoundError) as err:
        find_browser(env={}, playwright_path=None, which=lambda _name: None)
    assert str(err.value) == INSTALL_HINT
    assert INSTALL_HINT.endswith(".")
    assert "\n" not in INSTALL_HINT
    with pytest.raises(BrowserNotFoundError) as err:
        find_browser(env={ENV_VAR: str(tmp_path)}, playwright_path=None, which=lambda _n: None)
    assert "not an executable file" in str(err.value)


def test_the_sandbox_is_on_unless_root_or_set_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert use_sandbox(True) is True
    assert use_sandbox(False) is False
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert use_sandbox(None) is False
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert use_sandbox(None) is True


def test_launch_switches_keep_the_browser_off_the_network() -> None:
    for switch in (
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        "--no-first-run",
    ):
        assert switch in LAUNCH_ARGS


# -- keys -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("keys", "kind"),
    [
        ("Enter", "press"),
        ("PageDown", "press"),
        ("Control+a", "press"),
        ("Shift+Tab", "press"),
        ("Control+Shift+ArrowLeft", "press"),
        ("hello", "type"),
        ("a+b", "type"),
        ("enter", "type"),
        ("Enter\n", "type"),
    ],
)
def test_send_keys_parsing(keys: str, kind: str) -> None:
    parsed = parse_keys(keys)
    assert (parsed.kind, parsed.value) == (kind, keys)


# -- ownership -------------------------------------------------------------------------------


@dataclass
class FakeTab:
    id: str = "btab_1"
    owner_id: str | None = None


def test_owner_identity_comes_from_the_trusted_session() -> None:
    agent = CallerInfo(caller=CallerKind.AGENT, session_id="agent:1")
    assert Controller.of(agent) == Controller(
        "agent:1", require_claim=True, may_force=False, may_watch=False, principal="agent:1"
    )
    plugin = CallerInfo.for_plugin("probe")
    assert Controller.of(plugin).owner_id == Controller.of(plugin).principal == "plugin:probe"
    assert Controller.of(plugin).require_claim
    assert not Controller.of(plugin).may_watch
    internal = CallerInfo(caller=CallerKind.INTERNAL)
    assert Controller.of(internal) == Controller(
        "internal", require_claim=False, may_force=True, may_watch=True, principal="internal"
    )
    cli = CallerInfo(caller=CallerKind.CLI, session_id="socket:abc")
    assert not Controller.of(cli).require_claim
    # A claim is the connection's; element ids and CDP state are the local user's.
    assert (Controller.of(cli).owner_id, Controller.of(cli).principal) == ("socket:abc", "cli")
    assert Controller.of(cli).may_watch


def test_a_claimed_tab_is_readable_by_its_owner_and_the_local_user_only() -> None:
    tab = FakeTab()
    owner = Controller.of(CallerInfo(caller=CallerKind.AGENT, session_id="agent:1"))
    stranger = Controller.of(CallerInfo(caller=CallerKind.AGENT, session_id="agent:2"))
    peer = Controller.of(CallerInfo(caller=CallerKind.PLUGIN, session_id="socket:p"))
    user = Controller.of(CallerInfo(caller=CallerKind.CLI, session_id="socket:u"))
    for ctl in (owner, stranger, peer, user):  # an unclaimed tab is open to read
        check_access(tab, ctl, Access.READ)
    claim(tab, owner)
    for ctl in (owner, user):
        check_access(tab, ctl, Access.READ)
    for ctl in (stranger, peer):
        with pytest.raises(ToolError) as err:
            check_access(tab, ctl, Access.READ)
        assert err.value.code is ErrorCode.PERMISSION_DENIED
        assert _owned(err.value.details) == {"tabId": "btab_1", "ownerId": "agent:1"}
    with pytest.raises(ToolError):
        check_access(tab, user, Access.CONTROL)  # watching is not controlling


def test_claim_control_release_rules() -> None:
    a = Controller("a", require_claim=True, may_force=False)
    b = Controller("b", require_claim=True, may_force=False)
    root = Controller("internal", require_claim=False, may_force=True)
    tab = FakeTab()
    with pytest.raises(ToolError) as err:
        check_access(tab, a, Access.CONTROL)
    assert err.value.details == {"tabId": "btab_1", "reason": "claim_required", "gate": "claim"}
    check_access(tab, root, Access.CONTROL)
    claim(tab, a)
    claim(tab, a)
    assert tab.owner_id == "a"
    check_access(tab, a, Access.CONTROL)
    for action in (lambda: check_access(tab, b, Access.CONTROL), lambda: claim(tab, b)):
        with pytest.raises(ToolError) as err:
            action()
        assert err.value.code is ErrorCode.PERMISSION_DENIED
        assert _owned(err.value.details) == {"tabId": "btab_1", "ownerId": "a"}
    with pytest.raises(ToolError):
        check_release(tab, b, force=True)  # force is for internal callers only
    check_release(tab, root, force=True)
    tab.owner_id = None
    check_release(tab, b)  # releasing an unclaimed tab is fine


# -- element ids -----------------------------------------------------------------------------


def test_element_ids_only_resolve_for_the_latest_read() -> None:
    ids = ElementIds()
    with pytest.raises(ToolError) as err:
        ids.resolve("t", "el-0")
    assert err.value.details["reason"] == "unknown"
    ids.replace(3, "first")  # el-0..el-2
    extraction, index = ids.resolve("t", "el-2")
    assert (extraction.handle, index) == ("first", 3)
    old = ids.replace(2, "second")  # el-3..el-4
    assert old is not None
    assert old.handle == "first"
    with pytest.raises(ToolError) as err:
        ids.resolve("t", "el-2")
    assert err.value.details["reason"] == "stale"
    assert ids.resolve("t", "el-4")[1] == 2
    with pytest.raises(ToolError) as err:
        ids.resolve("t", "el-5")
    assert err.value.details["reason"] == "unknown"
    ids.invalidate("the tab navigated")
    with pytest.raises(ToolError) as err:
        ids.resolve("t", "el-4")
    assert "the tab navigated" in err.value.message
    assert err.value.code is ErrorCode.TOOL_FAILED


# -- logs ------------------------------------------------------------------------------------


def test_console_levels_follow_the_original_mapping() -> None:
    mapping = {
        "error": "error",
        "assert": "error",
        "warning": "warn",
        "warn": "warn",
        "debug": "debug",
        "verbose": "debug",
        "info": "info",
        "log": "log",
        "table": "log",
        "trace": "log",
    }
    assert {k: console_level(k) for k in mapping} == mapping


def test_ring_buffers_keep_the_last_thousand() -> None:
    console = ConsoleLog()
    for i in range(1500):
        console.add("log", f"line {i}")
    assert len(console) == 1000
    assert console.recent()[0]["text"] == "line 500"
    assert [e["text"] for e in console.recent(2)] == ["line 1498", "line 1499"]
    network = NetworkLog()
    for i in range(1200):
        network.started(i, "GET", f"http://x/{i}", "fetch")
        network.responded(i, 200)
        network.finished(i)
    entries = network.recent()
    assert len(entries) == 1000
    assert entries[0]["id"] == "net-201"
    assert entries[-1]["status"] == 200
    assert entries[-1]["failed"] is False


def test_network_entries_record_failures_and_stay_bounded_for_endless_requests() -> None:
    network = NetworkLog()
    network.started("a", "POST", "http://x/a", None)
    network.finished("a", "net::ERR_CONNECTION_REFUSED")
    (entry,) = network.recent()
    assert entry["failed"] is True
    assert entry["errorText"] == "net::ERR_CONNECTION_REFUSED"
    assert "resourceType" not in entry
    assert entry["durationMs"] >= 0
    for i in range(2500):
        network.started(("open", i), "GET", "http://x/poll", "xhr")
    assert len(network._open) <= 1000


# -- artifacts -------------------------------------------------------------------------------


def test_artifacts_get_fresh_private_files(tmp_path: Path) -> None:
    png = make_png(3, 2, (1, 2, 3, 255))
    assert png_size(png) == (3, 2)
    first = write_artifact(tmp_path / "artifacts", "shot", ".png", png)
    second = write_artifact(tmp_path / "artifacts", "shot", ".png", png)
    assert (first.name, second.name) == ("shot.png", "shot-1.png")
    assert stat.S_IMODE(os.stat(first).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "artifacts").st_mode) == 0o700
    assert decode_png(first.read_bytes())[:2] == (3, 2)
    for bad in ("../escape", "a/b", ".hidden"):
        with pytest.raises(ValueError, match="plain file name"):
            write_artifact(tmp_path / "artifacts", bad, ".png", png)
    with pytest.raises(ValueError, match="not a PNG"):
        png_size(b"GIF89a")


# -- CDP policy ------------------------------------------------------------------------------


def test_cdp_policy_is_an_allow_list() -> None:
    none = CdpScope()
    assert check_cdp("Runtime.evaluate", {"expression": "1"}, none) == {"expression": "1"}
    assert check_cdp("Page.navigate", {"url": " http://x/ "}, none) == {"url": "http://x/"}
    refused = (
        "Browser.close",
        "Target.attachToTarget",
        "Page.setDownloadBehavior",
        # reach past the tab without being in any deny-list: the shared cookie jar and
        # storage, local files, streams, the renderer process
        "Network.getAllCookies",
        "Network.getCookies",
        "Network.setCookie",
        "Storage.getCookies",
        "DOMStorage.getDOMStorageItems",
        "IndexedDB.requestData",
        "DOM.getFileInfo",
        "Page.handleFileChooser",
        "Page.crash",
        "IO.read",
        "Input.setIgnoreInputEvents",
        "Tracing.start",
        "Nonexistent.method",
        "runtime.evaluate",
    )
    for method in refused:
        with pytest.raises(ToolError) as err:
            check_cdp(method, {}, none)
        assert err.value.code is ErrorCode.VALIDATION_ERROR, method
        assert "cdpUnrestricted" in err.value.message
    with pytest.raises(ToolError):
        check_cdp("Page.navigate", {"url": "file:///etc/passwd"}, none)
    with pytest.raises(ToolError):
        check_cdp("Page.navigate", {}, none)


def test_cdp_local_files_only_inside_the_grant_scope(tmp_path: Path) -> None:
    scope, outside = tmp_path / "scope", tmp_path / "outside"
    scope.mkdir()
    outside.mkdir()
    (scope / "ok.txt").write_text("ok")
    (outside / "secret").write_text("secret")
    (scope / "link").symlink_to(outside / "secret")
    (scope / "sub").mkdir()
    confined = CdpScope(file_root=str(scope))

    def drag(files: Any) -> dict[str, Any]:
        return {"type": "drop", "x": 1, "y": 1, "data": {"items": [], "files": files}}

    sent = check_cdp("Input.dispatchDragEvent", drag(["ok.txt"]), confined)
    assert sent["data"]["files"] == [str((scope / "ok.txt").resolve())]
    sent = check_cdp("DOM.setFileInputFiles", {"files": [str(scope / "ok.txt")]}, confined)
    assert sent["files"] == [str((scope / "ok.txt").resolve())]
    assert check_cdp("Input.dispatchDragEvent", {"type": "dragEnter"}, confined) == {
        "type": "dragEnter"
    }
    for method, params in (
        ("Input.dispatchDragEvent", drag([str(outside / "secret")])),
        ("Input.dispatchDragEvent", drag(["../outside/secret"])),
        ("Input.dispatchDragEvent", drag(["link"])),
        ("DOM.setFileInputFiles", {"files": ["ok.txt", str(outside / "secret")]}),
    ):
        with pytest.raises(ToolError) as err:
            check_cdp(method, params, confined)
        assert err.value.code is ErrorCode.PERMISSION_DENIED
        assert err.value.details["reason"] == "outside grant scope"
    uri = {"mimeType": "text/uri-list", "data": "# links\nhttp://x/\nfile:///etc/passwd"}
    with pytest.raises(ToolError) as err:
        check_cdp("Input.dispatchDragEvent", {"type": "drop", "data": {"items": [uri]}}, confined)
    assert err.value.code is ErrorCode.VALIDATION_ERROR
    uri["data"] = "http://x/"
    assert check_cdp(
        "Input.dispatchDragEvent", {"type": "drop", "data": {"items": [uri]}}, confined
    )
    for files in (["sub"], "ok.txt", [1]):  # a directory would hand over its whole tree
        with pytest.raises(ToolError) as err:
            check_cdp("DOM.setFileInputFiles", {"files": files}, confined)
        assert err.value.code is ErrorCode.VALIDATION_ERROR
    # No directory-confined grant: no local files at all.
    with pytest.raises(ToolError) as err:
        check_cdp("DOM.setFileInputFiles", {"files": [str(scope / "ok.txt")]}, CdpScope())
    assert err.value.code is ErrorCode.PERMISSION_DENIED
    assert err.value.details["reason"] == "no grant scope"


# -- settings and plugin shape ---------------------------------------------------------------


def test_settings_defaults_and_validation() -> None:
    defaults = BrowserSettings()
    assert defaults.headless is True
    assert (defaults.viewport.width, defaults.viewport.height) == (1280, 720)
    assert defaults.extraSchemes == []
    assert browser_settings({}) == defaults
    assert browser_settings({"browser": {"headless": False}}).headless is False
    assert browser_settings({"browser": {"headless": "sometimes"}}) == defaults  # invalid: defaults
    with pytest.raises(ValidationError):
        BrowserSettings.model_validate({"extraSchemes": ["bad scheme"]})


def test_the_twenty_tools_in_the_original_order_with_their_capabilities() -> None:
    tools = Plugin().meith_tools()
    caps = {t.name: sorted(c.value for c in t.capabilities) for t in tools}
    assert [t.name for t in tools] == [
        "get_tabs", "get_active_tab", "open_browser_tab", "navigate", "go_back", "go_forward",
        "refresh", "focus_browser_tab", "close_browser_tab", "browser_use_start",
        "browser_use_end", "take_screenshot", "get_browser_state", "click_element", "type_text",
        "scroll_page", "send_keys", "cdp_command", "get_console_logs", "get_network_logs",
    ]  # fmt: skip
    control = ["controls-browser"]
    assert caps["get_tabs"] == caps["get_active_tab"] == caps["get_console_logs"] == ["read-only"]
    for name in (
        "open_browser_tab", "navigate", "go_back", "go_forward", "refresh", "focus_browser_tab",
        "close_browser_tab", "browser_use_start", "browser_use_end", "click_element",
        "type_text", "scroll_page", "send_keys",
    ):  # fmt: skip
        assert caps[name] == control, name
    assert caps["take_screenshot"] == caps["get_browser_state"] == ["controls-browser", "read-only"]
    assert caps["cdp_command"] == ["accesses-network", "controls-browser"]
    assert caps["get_network_logs"] == ["accesses-network", "read-only"]
    for t in tools:
        assert t.description
        assert t.input_schema["additionalProperties"] is False


def test_tab_store_spaces_and_reactivation() -> None:
    store = TabStore()
    a = store.new(object(), space_id="s", url="u", title=None, cwd=None)
    b = store.new(object(), space_id="s", url="u", title="T", cwd=None)
    c = store.new(object(), space_id="other", url="u", title=None, cwd=None)
    assert (a.active, b.active, c.active) == (False, True, True)
    assert store.active_space == "other"
    store.activate(a)
    assert store.active_in("s") is a
    store.remove(a, "gone")
    assert store.active_in("s") is b
    with pytest.raises(ToolError, match="was closed: gone"):
        store.get(a.id)
    assert b.to_dict()["title"] == "T"


def test_playwright_messages_lose_their_prefixes() -> None:
    assert playwright_message(Exception("Page.goto: net::ERR_FAILED at x\nCall log:\n  ...")) == (
        "net::ERR_FAILED at x"
    )
    assert playwright_message(Exception("")) == "Exception"


def _owned(details: dict[str, object]) -> dict[str, object]:
    """The tab and owner an ownership denial names (it says what to do instead, too)."""
    assert details["gate"] == "ownership"
    return {"tabId": details["tabId"], "ownerId": details["ownerId"]}
