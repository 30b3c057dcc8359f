"""Browser test fixtures: a local site on 127.0.0.1, and one runtime + browser per module.

Tests marked `browser` skip when no Chromium is found, and fail instead when
MEITH_REQUIRE_BROWSER=1 (CI), so the suite cannot pass by skipping.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from meith_core import CallerInfo, MeithHome, Runtime, ToolResult
from meith_plugins_browser.plugin import Plugin
from tests.browser.support import Site, require_browser


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("browser") is not None:
        require_browser()


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    # Module scope: the tests of a module share one event loop, so they can share a browser.
    return "asyncio"


@pytest.fixture(scope="session")
def site() -> Iterator[Site]:
    server = Site()
    yield server
    server.close()


@dataclass
class Browsing:
    """A runtime with the browser plugin loaded and approved, and the local site."""

    rt: Runtime
    plugin: Plugin
    site: Site
    events: list[dict[str, Any]] = field(default_factory=list)

    async def call(
        self, name: str, args: dict[str, Any] | None = None, caller: CallerInfo | None = None
    ) -> ToolResult:
        self.events.clear()
        kwargs: dict[str, Any] = {"on_event": self.events.append}
        if caller is not None:
            kwargs["caller"] = caller
        return await self.rt.call(name, args or {}, **kwargs)

    async def ok(
        self, name: str, args: dict[str, Any] | None = None, caller: CallerInfo | None = None
    ) -> Any:
        result = await self.call(name, args, caller)
        assert result.ok, result.to_wire()
        return result.content

    async def fails(
        self,
        code: str,
        name: str,
        args: dict[str, Any] | None = None,
        caller: CallerInfo | None = None,
    ) -> dict[str, Any]:
        result = await self.call(name, args, caller)
        assert not result.ok, result.to_wire()
        assert result.error is not None
        assert result.error.code == code, result.to_wire()
        return {"message": result.error.message, "details": result.error.details}

    async def open(self, path: str = "/index.html", **extra: Any) -> dict[str, Any]:
        tab = await self.ok("open_browser_tab", {"url": self.site.url(path), **extra})
        assert tab["loadState"] == "ready", tab
        return dict(tab)

    async def state(self, tab_id: str) -> dict[str, Any]:
        return dict(await self.ok("get_browser_state", {"tabId": tab_id}))

    async def element(self, tab_id: str, **match: Any) -> str:
        """The id of the first element of a fresh read whose fields match."""
        state = await self.state(tab_id)
        for el in state["elements"]:
            if all(el.get(k) == v for k, v in match.items()):
                return str(el["id"])
        raise AssertionError(f"no element {match} in {state['elements']}")

    async def js(self, tab_id: str, expression: str) -> Any:
        """Evaluate in the page through cdp_command (awaiting promises, by value)."""
        content = await self.ok(
            "cdp_command",
            {
                "tabId": tab_id,
                "method": "Runtime.evaluate",
                "params": {"expression": expression, "awaitPromise": True, "returnByValue": True},
            },
        )
        result = content["result"]
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")


async def start_browsing(site: Site, home_dir: Any) -> Browsing:
    require_browser()
    home = MeithHome(home_dir).ensure()
    rt = Runtime(home, load_plugins=False, cwd=os.getcwd())
    await rt.start()
    record = rt.load_plugin("browser", Plugin)
    assert record.status == "loaded", record.reason
    rt.approve_plugin("browser")
    return Browsing(rt, record.obj, site)


@pytest.fixture(scope="module")
async def browsing(site: Site, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Browsing]:
    """One runtime (and so one browser) for all the tests of a module."""
    b = await start_browsing(site, tmp_path_factory.mktemp("browser") / "home")
    yield b
    await b.rt.aclose()
    await b.plugin.host.wait_stopped()  # before the module's event loop closes
