"""The browser's life: lazy start, finding an executable, crashes, shutdown, permission gates."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from meith_core import Runtime
from meith_core.host.settings import SettingsError
from meith_plugins_browser.executable import ENV_VAR, INSTALL_HINT
from meith_plugins_browser.plugin import Plugin
from meith_plugins_browser.settings import BrowserSettings
from tests.browser.support import Site, require_browser

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
async def _drivers_stopped(runtime: Runtime) -> AsyncIterator[None]:
    """Let each runtime's Playwright driver finish stopping before the event loop closes."""
    yield
    await runtime.aclose()
    for record in runtime.plugins.records.values():
        if isinstance(record.obj, Plugin):
            await record.obj.host.wait_stopped()


def load(runtime: Runtime, *, approve: bool = True) -> Plugin:
    record = runtime.load_plugin("browser", Plugin)
    assert record.status == "loaded", record.reason
    if approve:
        runtime.approve_plugin("browser")
    return record.obj  # type: ignore[no-any-return]


def process_gone(pid: int) -> bool:
    """Exited (a zombie waiting for a parent that is gone counts as exited)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


async def poll(predicate, timeout: float = 20.0):  # type: ignore[no-untyped-def]
    with anyio.fail_after(timeout):
        while not (value := predicate()):
            await anyio.sleep(0.05)
        return value


@pytest.mark.slow
async def test_the_runtime_starts_and_answers_without_starting_a_browser(runtime: Runtime) -> None:
    plugin = load(runtime)
    listed = await runtime.call("get_tabs")
    assert listed.ok
    assert listed.content == {"browserTabs": [], "workspaceTabs": []}
    assert (await runtime.call("get_active_tab")).content is None
    unknown = await runtime.call("get_browser_state", {"tabId": "btab_000000000000"})
    assert unknown.error is not None
    assert unknown.error.code == "TOOL_FAILED"
    assert plugin.host.launches == 0
    assert not plugin.host.running


@pytest.mark.slow
async def test_no_browser_found_fails_with_how_to_install_one(
    runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(empty))
    plugin = load(runtime)
    result = await runtime.call("open_browser_tab", {"url": "about:blank"})
    assert result.error is not None
    assert result.error.code == "TOOL_FAILED"
    assert result.error.message == INSTALL_HINT
    assert "playwright install chromium" in INSTALL_HINT
    assert ENV_VAR in INSTALL_HINT
    assert (await runtime.call("get_tabs")).ok
    assert plugin.host.launches == 0


@pytest.mark.slow
async def test_a_bad_browser_variable_is_reported(
    runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "no-such-chrome"))
    load(runtime)
    result = await runtime.call("open_browser_tab", {"url": "about:blank"})
    assert result.error is not None
    assert result.error.code == "TOOL_FAILED"
    assert ENV_VAR in result.error.message
    assert "not an executable file" in result.error.message


async def test_privileged_tools_need_approval_and_a_grant(runtime: Runtime) -> None:
    load(runtime, approve=False)
    cli = runtime.open_session("cli")
    runtime.grant(cli, ["controls-browser"])
    denied = await runtime.call("open_browser_tab", {"url": "about:blank"}, caller=cli)
    assert denied.error is not None
    assert denied.error.code == "PERMISSION_DENIED"
    assert "meith plugins approve browser" in denied.error.message
    # Read-only tools need neither.
    assert (await runtime.call("get_tabs", caller=runtime.open_session("cli"))).ok
    runtime.approve_plugin("browser")
    stranger = runtime.open_session("cli")
    for tool in (
        "open_browser_tab",
        "navigate",
        "take_screenshot",
        "get_browser_state",
        "cdp_command",
    ):
        result = await runtime.call(tool, {}, caller=stranger)
        assert result.error is not None
        # Invalid arguments are caught first; then the caller gate.
        assert result.error.code in ("VALIDATION_ERROR", "PERMISSION_DENIED")
    result = await runtime.call(
        "navigate", {"tabId": "btab_x", "url": "about:blank"}, caller=stranger
    )
    assert result.error is not None
    assert result.error.code == "PERMISSION_DENIED"
    assert "no grant for controls-browser" in result.error.message
    # Through both gates, the call reaches the tool (which knows no such tab).
    allowed = await runtime.call("navigate", {"tabId": "btab_x", "url": "about:blank"}, caller=cli)
    assert allowed.error is not None
    assert allowed.error.code == "TOOL_FAILED"


async def test_the_settings_section_is_declared_and_validated(runtime: Runtime) -> None:
    load(runtime)
    assert runtime.settings.sections["browser"] is BrowserSettings
    with pytest.raises(SettingsError):
        runtime.settings.merge({"browser": {"extraSchemes": ["not a scheme"]}})
    with pytest.raises(SettingsError):
        runtime.settings.merge({"browser": {"unknown": True}})
    saved = runtime.settings.merge({"browser": {"headless": True, "extraSchemes": ["FILE:"]}})
    assert saved["browser"]["extraSchemes"] == ["file"]


@pytest.mark.browser
async def test_the_browser_variable_is_used_first(
    runtime: Runtime, site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = require_browser()
    monkeypatch.setenv(ENV_VAR, found.path)
    plugin = load(runtime)
    tab = await runtime.call("open_browser_tab", {"url": site.url()})
    assert tab.ok, tab.to_wire()
    assert plugin.host.found is not None
    assert (plugin.host.found.source, plugin.host.found.path) == ("env", found.path)


@pytest.mark.browser
async def test_a_crashed_browser_restarts_and_its_tabs_are_reported_closed(
    runtime: Runtime, site: Site
) -> None:
    plugin = load(runtime)
    first = (await runtime.call("open_browser_tab", {"url": site.url()})).content["id"]
    second = (await runtime.call("open_browser_tab", {"url": site.url("/next.html")})).content["id"]
    browser = plugin.host.browser
    assert browser is not None
    session = await browser.new_browser_cdp_session()
    try:
        await session.send("Browser.crash")
    except Exception:
        pass  # the browser went away mid-answer
    await poll(lambda: not plugin.host.running)
    listed = await runtime.call("get_tabs")
    assert listed.ok
    assert listed.content["browserTabs"] == []
    assert listed.diagnostics is not None
    notice = listed.diagnostics[0]
    assert notice.level == "warn"
    assert "exited unexpectedly" in notice.message
    assert first in notice.message
    assert second in notice.message
    gone = await runtime.call("navigate", {"tabId": first, "url": "about:blank"})
    assert gone.error is not None
    assert gone.error.code == "TOOL_FAILED"
    assert gone.error.message == f"Browser tab {first} was closed: the browser exited unexpectedly"
    again = await runtime.call("open_browser_tab", {"url": site.url()})
    assert again.ok, again.to_wire()
    assert again.content["title"] == "Index"
    assert plugin.host.launches == 2
    assert plugin.host.running


async def behind_the_hosts_back(plugin: Plugin, tab_id: str, method: str) -> None:
    """Send a CDP method cdp_command refuses, on a session of the test's own."""
    tab = plugin.host.tabs.get(tab_id)
    session = await plugin.host.new_cdp_session(tab)
    with contextlib.suppress(Exception):  # the page may go before it answers
        await session.send(method)


@pytest.mark.browser
async def test_a_crashed_page_closes_its_tab(runtime: Runtime, site: Site) -> None:
    plugin = load(runtime)
    tid = (await runtime.call("open_browser_tab", {"url": site.url()})).content["id"]
    await behind_the_hosts_back(plugin, tid, "Page.crash")
    await poll(lambda: plugin.host.tabs.find(tid) is None)
    gone = await runtime.call("get_browser_state", {"tabId": tid})
    assert gone.error is not None
    assert gone.error.message == f"Browser tab {tid} was closed: the page crashed"
    listed = await runtime.call("get_tabs")
    assert listed.diagnostics is not None
    assert "crashed" in listed.diagnostics[0].message
    assert plugin.host.running
    assert (await runtime.call("open_browser_tab", {"url": site.url()})).ok


@pytest.mark.browser
async def test_a_page_closed_behind_the_hosts_back_closes_its_tab(
    runtime: Runtime, site: Site
) -> None:
    plugin = load(runtime)
    tid = (await runtime.call("open_browser_tab", {"url": site.url()})).content["id"]
    await behind_the_hosts_back(plugin, tid, "Page.close")
    await poll(lambda: plugin.host.tabs.find(tid) is None)
    gone = await runtime.call("scroll_page", {"tabId": tid, "deltaY": 1})
    assert gone.error is not None
    assert gone.error.message == (
        f"Browser tab {tid} was closed: the page was closed (by the page or over CDP)"
    )
    assert plugin.host.running


@pytest.mark.browser
async def test_shutdown_closes_the_browser(runtime: Runtime, site: Site) -> None:
    plugin = load(runtime)
    assert (await runtime.call("open_browser_tab", {"url": site.url()})).ok
    pid = plugin.host._browser_pid
    assert pid is not None
    assert not process_gone(pid)
    await runtime.aclose()
    assert not plugin.host.running
    await poll(lambda: process_gone(pid))


@pytest.mark.browser
async def test_without_a_usable_sandbox_the_browser_runs_without_it_and_says_so(
    runtime: Runtime, site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs a machine where Chromium's sandbox fails: here, running as root")
    # As root Chromium refuses its sandbox: the "auto" setting must fall back, with a warning.
    monkeypatch.setattr("meith_plugins_browser.launch.use_sandbox", lambda setting: True)
    plugin = load(runtime)
    opened = await runtime.call("open_browser_tab", {"url": site.url()})
    assert opened.ok, opened.to_wire()
    assert opened.diagnostics is not None
    assert "sandbox is not available" in opened.diagnostics[0].message
    assert plugin.host.running
    # Asked for explicitly, a sandbox that cannot work is an error.
    await runtime.aclose()
    rt = Runtime(runtime.home, load_plugins=False)
    await rt.start()
    try:
        rt.load_plugin("browser", Plugin)
        rt.approve_plugin("browser")
        rt.settings.merge({"browser": {"sandbox": True}})
        monkeypatch.undo()
        failed = await rt.call("open_browser_tab", {"url": site.url()})
        assert failed.error is not None
        assert failed.error.code == "TOOL_FAILED"
        assert "failed to start" in failed.error.message
    finally:
        await rt.aclose()
        await rt.plugins.records["browser"].obj.host.wait_stopped()
