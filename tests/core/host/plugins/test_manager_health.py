"""Plugins add health checks (`meith_health`) to `app_health` and the plugin listing; one
plugin's broken check is reported as an error and harms nobody else's."""

from __future__ import annotations

from typing import Any

import pytest

from meith_core import hookimpl

pytestmark = pytest.mark.anyio


class Advising:
    @hookimpl
    def meith_health(self) -> list[dict[str, Any]]:
        return [{"name": "setting", "status": "warn", "message": "set the thing", "details": {}}]


class Broken:
    @hookimpl
    def meith_health(self) -> list[dict[str, Any]]:
        raise RuntimeError("boom")


class Nonsense:
    @hookimpl
    def meith_health(self) -> Any:
        return [{"name": "x", "status": "fine"}]


async def test_plugin_checks_reach_app_health_and_list_plugins(runtime) -> None:
    for pid, obj in (("advising", Advising), ("broken", Broken), ("nonsense", Nonsense)):
        assert runtime.load_plugin(pid, obj).status == "loaded"
    health = (await runtime.call("app_health")).content
    checks = {c["name"]: c for c in health["checks"]}
    assert checks["advising.setting"]["status"] == "warn"
    assert checks["advising.setting"]["message"] == "set the thing"
    assert checks["broken.health"]["status"] == "error"
    assert "boom" in checks["broken.health"]["message"]
    assert checks["nonsense.health"]["status"] == "error"
    assert health["status"] == "degraded"  # the broken ones; a warning alone leaves it ok

    listing = {p["id"]: p for p in (await runtime.call("list_plugins")).content}
    assert [c["status"] for c in listing["advising"]["health"]] == ["warn"]
    assert listing["core"]["health"] == []


async def test_a_warning_alone_leaves_the_runtime_ok(runtime) -> None:
    runtime.load_plugin("advising", Advising)
    health = (await runtime.call("app_health")).content
    others = [c for c in health["checks"] if c["name"] != "advising.setting"]
    if all(c["status"] == "ok" for c in others):
        assert health["status"] == "ok"
