"""A plugin installed while `meith serve` runs is loaded without a restart: listed by
`meith plugins` (from the runtime) and `meith tools`, callable, started (`meith_startup`), and
announced to watchers with `tools_changed`.

"Installing" writes what pip writes for an entry point — the module and a `.dist-info` with
`entry_points.txt` — into a directory on the runtime's PYTHONPATH.
"""

from __future__ import annotations

import json
from pathlib import Path

from meith_core.client import Client
from tests.harness import wait_until
from tests.server.late_plugin import install_late as _install


def _server(meith_server, tmp_path: Path):
    site = tmp_path / "site"
    site.mkdir()
    markers = tmp_path / "markers"
    markers.mkdir()
    env = {"PYTHONPATH": str(site), "LATE_MARKERS": str(markers)}
    srv = meith_server(env=env, plugins="core,late")
    return srv, site, markers


def test_a_plugin_installed_while_serving_is_listed_called_and_started(
    meith_server, tmp_path
) -> None:
    srv, site, markers = _server(meith_server, tmp_path)
    assert "late_hello" not in srv.cli("tools").stdout
    _install(site)

    listed = srv.cli("plugins")
    assert listed.stdout.startswith(f"Plugins of the running meith runtime ({srv.socket}):")
    assert "late  (meith-late-plugin 1.0)  loaded" in listed.stdout
    assert "late_hello" in srv.cli("tools").stdout
    result = srv.call("late_hello")
    assert result["content"] == {"hello": "late", "started": True}
    assert (markers / "started").read_text() == "yes"
    assert srv.proc.poll() is None  # the same runtime all along


def test_calling_the_tool_of_a_plugin_installed_since_needs_no_listing_first(
    meith_server, tmp_path
) -> None:
    srv, site, _ = _server(meith_server, tmp_path)
    _install(site)
    assert srv.call("late_hello")["content"]["started"] is True


def test_watchers_hear_of_a_plugin_installed_while_they_watch(meith_server, tmp_path) -> None:
    srv, site, _ = _server(meith_server, tmp_path)
    with Client(srv.socket) as client:
        before = {t["name"] for t in client.list_tools(watch=True)}
        assert "late_hello" not in before
        _install(site)
        # The runtime looks on its own (its watchdog), without anyone listing or calling.
        assert wait_until(lambda: _poll(client), timeout=30)
        assert "late_hello" in {t["name"] for t in client.list_tools()}


def _poll(client: Client) -> bool:
    client.call("app_health")  # lets the client read frames that arrived meanwhile
    return client.tools_changed


def test_plugins_reload_retries_a_plugin_that_failed_to_import(meith_server, tmp_path) -> None:
    srv, site, _ = _server(meith_server, tmp_path)
    _install(site, broken=True)
    listed = json.loads(srv.cli("plugins", "--json").stdout)
    late = next(p for p in listed if p["id"] == "late")
    assert late["status"] == "failed"
    assert "needs a dependency" in late["reason"]
    _install(site)  # the dependency arrived: the module imports now
    reloaded = srv.cli("plugins", "reload")
    assert reloaded.returncode == 0, reloaded.stderr
    assert reloaded.stdout == "late  (meith-late-plugin 1.0)  loaded  [late_hello]\n"
    assert srv.call("late_hello")["ok"] is True
    again = srv.cli("plugins", "reload")
    assert again.stdout.startswith("No new plugins")


def test_without_a_runtime_plugins_lists_the_environment_and_says_so(
    meith_server, tmp_path
) -> None:
    srv, _, _ = _server(meith_server, tmp_path)
    srv.stop()
    listed = srv.cli("plugins")
    assert listed.returncode == 0
    assert listed.stderr.startswith("No meith runtime is running")
    assert listed.stdout.startswith("core  (meith-core ")
    reload = srv.cli("plugins", "reload")
    assert reload.returncode == 3
    assert "No meith runtime is running" in reload.stderr
