"""The trust root is the local user's alone, played against a real `meith serve`.

- settings a plugin marks as policy (the browser's URL schemes, unrestricted CDP) change only
  through `meith settings set`, never through `set_app_settings` on the socket;
- a standing grant's `--uses N` is one budget shared by every connection, and survives a
  restart.
"""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.harness import MEITH


def _settings(home: Path) -> dict[str, object]:
    path = home / "settings.json"
    return json.loads(path.read_text()) if path.exists() else {}


def test_a_confined_writes_files_grant_cannot_widen_browser_policy(meith_server, tmp_path):
    srv = meith_server()
    project = tmp_path / "project"
    project.mkdir()
    srv.grant("writes-files", cwd=str(project))
    # A grant confined to a directory never covers settings every session reads (issue 20).
    env = srv.call(
        "set_app_settings", {"settings": {"browser": {"headless": True}}}, cwd=str(project)
    )
    assert env["error"]["code"] == "PERMISSION_DENIED"
    assert "acts on global state (settings)" in env["error"]["message"]
    # Even an unconfined grant for the tool does not reach the policy keys.
    srv.grant("writes-files", tool="set_app_settings")
    for patch in (
        {"browser": {"cdpUnrestricted": True}},
        {"browser": {"extraSchemes": ["file"]}},
    ):
        env = srv.call("set_app_settings", {"settings": patch}, cwd=str(project))
        assert env["ok"] is False, env
        assert env["error"]["code"] == "PERMISSION_DENIED"
        assert "meith settings set" in env["error"]["message"]
    assert "browser" not in _settings(srv.home.root)

    # Settings that are not policy still go through the tool.
    env = srv.call(
        "set_app_settings", {"settings": {"browser": {"headless": True}}}, cwd=str(project)
    )
    assert env["ok"] is True, env

    # The local user changes policy on the CLI.
    done = srv.cli("settings", "set", "browser.cdpUnrestricted", "true")
    assert done.returncode == 0, done.stderr
    assert _settings(srv.home.root)["browser"]["cdpUnrestricted"] is True  # type: ignore[index]

    # Writing the section back unchanged (a UI round-trip) is not a policy change.
    current = srv.call("get_app_settings")["content"]["settings"]
    env = srv.call("set_app_settings", {"settings": current}, cwd=str(project))
    assert env["ok"] is True, env
    # Turning it off again through the socket is a change of policy too.
    env = srv.call("set_app_settings", {"settings": {"browser": None}}, cwd=str(project))
    assert env["error"]["code"] == "PERMISSION_DENIED"


def _count_ok(srv, n: int) -> int:
    """Run `n` concurrent `meith call set_app_settings` processes; how many were allowed."""

    def one(i: int) -> int:
        done = subprocess.run(
            [MEITH, "call", "set_app_settings", "--arg-json",
             json.dumps({"settings": {"git": {"runHooks": i % 2 == 0}}}), "--json"],
            capture_output=True, text=True, env=srv.cli_env, timeout=60, check=False,
        )  # fmt: skip
        return 1 if json.loads(done.stdout)["ok"] else 0

    with ThreadPoolExecutor(max_workers=n) as pool:
        return sum(pool.map(one, range(n)))


def test_uses_is_one_budget_across_connections_and_restarts(meith_server, tmp_path):
    home = tmp_path / "home"
    srv = meith_server(home=home)
    grant = srv.grant("writes-files", tool="set_app_settings", uses=3)
    # Each `meith call` is a connection (a session) of its own.
    assert srv.call("set_app_settings", {"settings": {"git": {"runHooks": True}}})["ok"] is True
    assert srv.call("set_app_settings", {"settings": {"git": {"runHooks": False}}})["ok"] is True
    listed = json.loads(srv.cli("grants", "list", "--json").stdout)
    assert next(g for g in listed if g["id"] == grant)["uses"] == 1
    srv.stop()

    srv = meith_server(home=home)
    # Six concurrent callers race for the last use: exactly one wins.
    assert _count_ok(srv, 6) == 1
    env = srv.call("set_app_settings", {"settings": {"git": {"runHooks": True}}})
    assert env["error"]["code"] == "PERMISSION_DENIED"
    assert all(g["id"] != grant for g in json.loads(srv.cli("grants", "list", "--json").stdout))
