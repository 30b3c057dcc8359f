"""Plugin discovery through the `meith.plugins` entry points of a really installed fixture
distribution: each plugin loads on its own, failures are recorded with their reason, and
MEITH_PLUGINS / MEITH_DISABLE_PLUGINS select plugins."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from meith_core import ErrorCode, MeithHome, Runtime
from meith_core.host.plugins.hookspecs import ENTRY_POINT_GROUP
from meith_core.host.plugins.manager import PluginManager
from meith_core.host.settings import SettingsError

GOOD = {"fixture_good", "fixture_module"}
BROKEN = {
    "fixture_import_error": "import failed: RuntimeError: fixture plugin refuses to import",
    "fixture_exit_at_import": "import failed: SystemExit: 3",
    "fixture_missing_attr": "import failed: AttributeError",
    "fixture_tools_error": ("RuntimeError: fixture tools exploded: required program not found"),
    "fixture_bad_tool": (
        "ToolDefinitionError: tool 'fixture_bad': declare at least one capability"
    ),
    "fixture_name_clash": (
        "DuplicateToolError: tool 'fixture_echo' is already registered by plugin 'fixture_good'"
    ),
}
ALL_FIXTURES = GOOD | set(BROKEN)


def fixture_records(runtime: Runtime) -> dict[str, Any]:
    return {pid: r for pid, r in runtime.plugins.records.items() if pid.startswith("fixture_")}


@pytest.fixture
async def discovered(fixture_plugins: Path, meith_home: MeithHome) -> Any:
    rt = Runtime(meith_home, load_plugins=True, plugin_allow=ALL_FIXTURES)
    await rt.start()
    try:
        yield rt
    finally:
        await rt.aclose()


@pytest.mark.slow
@pytest.mark.anyio
async def test_every_failure_is_recorded_with_its_reason_and_the_rest_still_load(
    discovered: Runtime,
) -> None:
    records = fixture_records(discovered)
    assert set(records) == ALL_FIXTURES
    for pid in GOOD:
        assert records[pid].status == "loaded", records[pid].reason
        assert records[pid].reason is None
        assert records[pid].distribution == "meith-fixture-plugins"
        assert records[pid].version == "0.0.1"
        assert records[pid].fingerprint.startswith("sha256:")
    for pid, reason in BROKEN.items():
        assert records[pid].status == "failed"
        assert records[pid].reason.startswith(reason), records[pid].reason
    assert discovered.plugins.records["core"].status == "loaded"


@pytest.mark.anyio
async def test_the_tools_of_loaded_plugins_work_and_failed_plugins_register_none(
    discovered: Runtime,
) -> None:
    names = {d["name"]: d["plugin"] for d in discovered.describe()}
    assert names["fixture_echo"] == "fixture_good"
    assert names["fixture_touch"] == "fixture_good"
    assert names["fixture_module_tool"] == "fixture_module"
    assert "fixture_bad" not in names
    assert "fixture_clash_unique" not in names  # all of a plugin's tools, or none
    echo = await discovered.call("fixture_echo", {"text": "hi"})
    assert echo.content == {"text": "hi", "greeting": "hello"}
    assert (await discovered.call("fixture_module_tool")).content == "from a module"


@pytest.mark.anyio
async def test_a_plugin_that_failed_to_load_is_never_started(discovered: Runtime) -> None:
    # fixture_tools_error's meith_startup raises AssertionError if ever called; it is
    # unregistered from pluggy when meith_tools failed.
    assert discovered.plugins.pm.get_plugin("fixture_tools_error") is None
    assert discovered.plugins.records["fixture_tools_error"].status == "failed"
    good = discovered.plugins.records["fixture_good"].obj
    assert good.events == ["startup"]


@pytest.mark.anyio
async def test_a_discovered_plugins_privileged_tool_needs_its_approval(
    discovered: Runtime,
) -> None:
    denied = await discovered.call("fixture_touch", {"text": "x"})
    assert denied.error.code is ErrorCode.PERMISSION_DENIED
    assert "meith plugins approve fixture_good" in denied.error.message
    discovered.approve_plugin("fixture_good")
    assert (await discovered.call("fixture_touch", {"text": "x"})).content == "touched x"


@pytest.mark.anyio
async def test_a_discovered_plugins_settings_section_is_validated(discovered: Runtime) -> None:
    discovered.settings.merge({"fixture": {"greeting": "ahoy"}})
    assert (await discovered.call("fixture_echo")).content["greeting"] == "ahoy"
    with pytest.raises(SettingsError, match="fixture"):
        discovered.settings.merge({"fixture": {"greeting": "x", "unknown": 1}})


@pytest.mark.anyio
async def test_shutdown_hooks_of_discovered_plugins_run(
    fixture_plugins: Path, meith_home: MeithHome
) -> None:
    async with Runtime(meith_home, plugin_allow={"fixture_good"}) as rt:
        good = rt.plugins.records["fixture_good"].obj
    assert good.events == ["startup", "shutdown"]


def _discover(**kwargs: Any) -> dict[str, Any]:
    manager = PluginManager()
    manager.discover(lambda tools, plugin_id: None, **kwargs)
    return manager.records


def test_meith_plugins_is_an_allow_list(
    fixture_plugins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEITH_PLUGINS", "fixture_good, fixture_module")
    records = _discover()
    assert records["fixture_good"].status == "loaded"
    assert records["fixture_module"].status == "loaded"
    for pid in BROKEN:
        assert records[pid].status == "disabled"
        assert records[pid].reason == "not listed in MEITH_PLUGINS"
    assert "fixture_import_error" not in [m.split(".")[-1] for m in sys.modules]


@pytest.mark.slow
def test_meith_disable_plugins_is_a_block_list(
    fixture_plugins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEITH_DISABLE_PLUGINS", ",".join(BROKEN))
    records = _discover()
    for pid in BROKEN:
        assert records[pid].status == "disabled"
        assert records[pid].reason == "disabled by MEITH_DISABLE_PLUGINS"
    assert records["fixture_good"].status == "loaded"


def test_the_block_list_wins_over_the_allow_list(
    fixture_plugins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEITH_PLUGINS", "fixture_good")
    monkeypatch.setenv("MEITH_DISABLE_PLUGINS", "fixture_good")
    assert _discover()["fixture_good"].status == "disabled"


@pytest.mark.slow
def test_without_the_fixture_distribution_nothing_of_it_is_discovered(
    meith_home: MeithHome,
) -> None:
    # Proof that the fixture package is not installed in the shared dev venv.
    assert not any(pid.startswith("fixture_") for pid in _discover())


def test_a_second_plugin_claiming_a_taken_tool_name_fails_with_a_clear_reason(
    fixture_plugins: Path,
) -> None:
    registered: dict[str, str] = {}

    def register(tools: list[Any], plugin_id: str) -> None:
        for t in tools:
            if t.name in registered:
                raise ValueError(f"tool {t.name!r} is already registered by {registered[t.name]}")
        for t in tools:
            registered[t.name] = plugin_id

    manager = PluginManager()
    manager.discover(register, allow={"fixture_good", "fixture_name_clash"})
    assert manager.records["fixture_good"].status == "loaded"
    clash = manager.records["fixture_name_clash"]
    assert clash.status == "failed"
    assert "fixture_echo" in (clash.reason or "")
    assert registered["fixture_echo"] == "fixture_good"


@pytest.mark.slow
def test_discovery_in_a_fresh_process_honours_the_environment(
    fixture_plugins: Path, tmp_path: Path
) -> None:
    script = (
        "import json\n"
        "from meith_core.host.plugins.manager import PluginManager\n"
        "m = PluginManager()\n"
        "m.discover(lambda tools, pid: None)\n"
        "print(json.dumps({p: [r.status, r.reason] for p, r in m.records.items()}))\n"
    )
    env = {
        **os.environ,
        "MEITH_PLUGINS": "fixture_good,fixture_import_error",
        "MEITH_HOME": str(tmp_path / "home"),
    }
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    records = json.loads(done.stdout)
    assert records["fixture_good"] == ["loaded", None]
    assert records["fixture_import_error"][0] == "failed"
    assert records["fixture_tools_error"] == ["disabled", "not listed in MEITH_PLUGINS"]


def test_an_installed_plugin_may_not_take_an_id_reserved_for_the_host(
    fixture_plugins: Path,
) -> None:
    records = _discover(allow={"app", "core", "fixture_good"})
    for pid in ("app", "core"):
        assert records[pid].status == "failed"
        assert records[pid].reason == f"plugin id {pid!r} is reserved for the host"


@pytest.mark.anyio
async def test_an_impostor_app_plugin_gets_no_free_pass(
    fixture_plugins: Path, meith_home: MeithHome
) -> None:
    async with Runtime(meith_home, plugin_allow={"app", "core"}) as rt:
        assert rt.plugins.records["core"].distribution == "meith-core"  # the host's own
        assert rt.plugins.records["app"].status == "failed"
        assert "impostor_write" not in rt.catalogue
        result = await rt.call("impostor_write")
        assert result.error.code is ErrorCode.UNKNOWN_TOOL


def test_the_entry_point_group_is_meith_plugins() -> None:
    assert ENTRY_POINT_GROUP == "meith.plugins"
