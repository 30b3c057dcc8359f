"""The README walkthrough, end to end through a real `meith serve` and the real CLI."""

from __future__ import annotations

import json

from meith_core.base.instances import is_pid_alive


def test_walkthrough_denied_then_granted_then_audited(meith_server) -> None:
    srv = meith_server()
    tools = json.loads(srv.cli("tools", "--json").stdout)
    assert "app_health" in {t["name"] for t in tools}

    health = srv.call("app_health")
    assert health["ok"]
    assert health["content"]["status"] in ("ok", "degraded")

    denied = srv.call("set_app_settings", {"settings": {"git": {"runHooks": True}}})
    assert denied["error"]["code"] == "PERMISSION_DENIED"
    assert srv.last is not None
    assert srv.last.returncode == 4
    assert "meith grants add" in denied["error"]["message"]

    srv.grant("writes-files", tool="set_app_settings")
    allowed = srv.call("set_app_settings", {"settings": {"git": {"runHooks": True}}})
    assert allowed["ok"], allowed
    assert json.loads((srv.home.settings_path).read_text())["git"]["runHooks"] is True

    audit = [
        json.loads(line) for line in srv.cli("audit", "--json", "-n", "10").stdout.splitlines()
    ]
    decisions = [(r["toolName"], r["decision"]) for r in audit]
    assert ("set_app_settings", "deny") in decisions
    assert ("set_app_settings", "allow") in decisions


def test_sigterm_stops_cleanly_and_removes_its_files(meith_server) -> None:
    srv = meith_server()
    instance = srv.home.instances_dir / f"{srv.pid}.json"
    assert instance.exists()
    assert srv.stop() == 0
    assert not instance.exists()
    assert not is_pid_alive(srv.pid)
    import os

    assert not os.path.exists(srv.socket)
