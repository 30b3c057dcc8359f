"""The built-in `core` plugin: health, instances, plugins, settings, audit."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ConfigDict

from meith_core import hookimpl

pytestmark = pytest.mark.anyio


async def test_core_tools_are_registered_with_their_capabilities(served) -> None:
    caps = {
        t["name"]: t["capabilities"] for t in served.runtime.describe() if t["plugin"] == "core"
    }
    assert caps == {
        "app_health": ["read-only"],
        "app_list_instances": ["read-only"],
        "list_plugins": ["read-only"],
        "reload_plugins": ["read-only"],
        "get_app_settings": ["read-only"],
        "set_app_settings": ["writes-files"],
        "get_audit_log": ["read-only"],
    }


async def test_app_health_reports_socket_plugins_and_audit(served) -> None:
    health = (await served.runtime.call("app_health")).content
    checks = {c["name"]: c for c in health["checks"]}
    assert health["status"] == "ok"
    assert checks["socket"]["details"]["listening"] is True
    assert checks["socket"]["details"]["socketPath"] == served.socket
    assert "probe" in checks["plugins"]["details"]["loaded"]
    assert checks["audit"]["status"] == "ok"
    assert health["protocolVersion"] == 1


async def test_app_health_is_degraded_when_the_audit_trail_cannot_be_written(served) -> None:
    served.runtime.audit.close()
    served.runtime.home.audit_path.unlink(missing_ok=True)
    served.runtime.home.audit_path.mkdir()  # a directory where the file should be
    health = (await served.runtime.call("app_health")).content
    audit = next(c for c in health["checks"] if c["name"] == "audit")
    assert health["status"] == "degraded"
    assert audit["status"] == "error"
    assert "audit trail unavailable" in audit["details"]["problem"]


async def test_list_plugins_shows_status_tools_and_approval(served) -> None:
    listing = {p["id"]: p for p in (await served.runtime.call("list_plugins")).content}
    probe = listing["probe"]
    assert probe["status"] == "loaded"
    assert {"name": "probe_write", "capabilities": ["writes-files"]} in probe["tools"]
    assert probe["approval"]["valid"] is True
    assert listing["core"]["approval"]["implicit"] is True


async def test_settings_round_trip_with_plugin_sections_validated(served) -> None:
    class Editor(BaseModel):
        model_config = ConfigDict(extra="forbid")
        theme: str = "light"

    class EditorPlugin:
        @hookimpl
        def meith_tools(self) -> list:
            return []

        @hookimpl
        def meith_settings(self) -> dict:
            return {"editor": Editor}

    served.runtime.load_plugin("editor", EditorPlugin)
    ok = await served.runtime.call(
        "set_app_settings", {"settings": {"editor": {"theme": "dark"}, "other": [1]}}
    )
    assert ok.content == {"settings": {"editor": {"theme": "dark"}, "other": [1]}}
    bad = await served.runtime.call("set_app_settings", {"settings": {"editor": {"colour": "red"}}})
    assert bad.error.code == "VALIDATION_ERROR"
    assert "invalid setting editor.colour" in bad.error.message
    assert (await served.runtime.call("get_app_settings")).content == {
        "settings": {"editor": {"theme": "dark"}, "other": [1]}
    }
    removed = await served.runtime.call("set_app_settings", {"settings": {"other": None}})
    assert removed.content == {"settings": {"editor": {"theme": "dark"}}}
    assert json.loads(served.runtime.home.settings_path.read_text()) == {
        "editor": {"theme": "dark"}
    }


async def test_get_audit_log_returns_the_newest_entries_with_filters(served) -> None:
    session = served.runtime.open_session("cli")
    for i in range(5):
        await served.runtime.call("probe_echo", {"value": i}, caller=session)
    await served.runtime.call("probe_write", {"name": "x"}, caller=session)
    entries = (
        await served.runtime.call("get_audit_log", {"limit": 3, "toolName": "probe_echo"})
    ).content["entries"]
    assert [json.loads(e["argsSummary"])["value"] for e in entries] == [2, 3, 4]
    denied = (await served.runtime.call("get_audit_log", {"decision": "deny"})).content["entries"]
    assert [e["toolName"] for e in denied] == ["probe_write"]
    mine = (
        await served.runtime.call("get_audit_log", {"sessionId": session.session_id, "limit": 100})
    ).content["entries"]
    assert len(mine) == 6


async def test_app_list_instances_is_empty_in_process(served) -> None:
    assert (await served.runtime.call("app_list_instances")).content == []
