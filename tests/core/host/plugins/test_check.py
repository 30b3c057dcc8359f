"""`meith plugins check`: every problem of the broken fixture plugins, an unknown id, a new plugin
as generated, and the first-party plugins."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.host.plugins.support import BROKEN, ROOT, meith


@pytest.mark.slow
def test_check_lists_every_problem_of_the_broken_fixture_plugins(tmp_path: Path) -> None:
    done = meith("plugins", "check", str(BROKEN), "--json", env={"MEITH_HOME": str(tmp_path)})
    assert done.returncode == 1, done.stderr
    reports = {r["plugin"]: r for r in json.loads(done.stdout)}
    errors = {
        pid: [p["message"] for p in r["problems"] if p["level"] == "error"]
        for pid, r in reports.items()
    }
    expected = {
        "undocumented": [
            "tool undocumented_search: argument 'query' has no description",
            "tool undocumented_search: argument 'inner.depth' has no description",
        ],
        "unscoped": [
            "tool unscoped_write: takes 'cwd' and declares writes-files, but does not say how "
            "it honours a grant confined to a directory: check ctx.grant_scope and declare "
            'grant_scope="enforced"'
        ],
        "undeclared": [
            "tool undeclared_stop: declares starts-process but not what it acts on: "
            'acts_on="path:ARG"'
        ],
        "sync_forever": [
            "tool sync_forever_follow: a sync tool with NO_TIMEOUT can never be stopped"
        ],
        "unmarked_hook": ["meith_shutdown is not marked @hookimpl, so meith never calls it"],
        "future_api": [
            "does not load: PluginApiError: plugin 'future_api' was built for meith plugin API "
            ">=2,<3, but this meith-core 0.1.0 provides plugin API 1; upgrade meith-core"
        ],
        "clash": ["tool git_status: the name is taken by installed plugin 'git'"],
        "wrapper": [
            "does not load: HookOptionError: hook 'meith_startup' is declared with "
            "hookwrapper/wrapper, which meith does not support"
        ],
        "private_import": ["meith_check_private.py:8: imports meith_core.base.ids"],
        "import_error": [
            "does not load: import failed: ModuleNotFoundError: No module named "
            "'meith_check_fixtures.nowhere'"
        ],
    }
    for pid, wanted in expected.items():
        assert len(errors[pid]) == len(wanted), (pid, errors[pid])
        for message, start in zip(errors[pid], wanted, strict=True):
            assert start in message, (pid, message)
    slow = reports["slow_import"]
    assert slow["ok"] is True
    assert slow["importMs"] > 200
    assert any("importing the plugin took" in p["message"] for p in slow["problems"])


@pytest.mark.slow
def test_check_of_an_unknown_plugin_id_fails_naming_the_installed_ones(tmp_path: Path) -> None:
    done = meith("plugins", "check", "nosuchplugin", env={"MEITH_HOME": str(tmp_path)})
    assert done.returncode == 1
    assert (
        "no installed plugin 'nosuchplugin' (installed: browser, files, git, process)"
        in done.stdout
    )


@pytest.mark.slow
def test_a_new_plugin_passes_check_as_generated(tmp_path: Path) -> None:
    target = tmp_path / "w"
    outside = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    done = subprocess.run(
        [
            *(sys.executable, "-c", "from meith_core.cli import run; run()"),
            *("plugins", "new", "weather-station", "--dir", str(target)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=outside,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Created plugin 'weather_station' (distribution meith-weather-station)" in done.stdout
    # meith-core is not on PyPI: the next steps start in meith's environment (this one)...
    if sys.prefix != sys.base_prefix:
        assert f"  . {Path(sys.prefix) / 'bin' / 'activate'}   # meith's environment" in done.stdout
    # ...and the plugin's nox sessions and its own dev environment get meith-core from where
    # this one was installed from (the test tools never go in meith's environment).
    assert f'MEITH_CORE = os.environ.get("MEITH_CORE", "{ROOT / "meith_core"}")' in (
        (target / "noxfile.py").read_text()
    )
    dev = (target / "dev-requirements.txt").read_text().splitlines()
    assert dev[-2:] == [str(ROOT / "meith_core"), "-e .[test]"]
    assert "python3 -m venv .venv && .venv/bin/pip install -r dev-requirements.txt" in done.stdout
    files = sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())
    assert files == [
        ".gitignore",
        "README.md",
        "dev-requirements.txt",
        "noxfile.py",
        "pyproject.toml",
        "src/meith_weather_station/__init__.py",
        "src/meith_weather_station/plugin.py",
        "src/meith_weather_station/py.typed",
        "tests/test_plugin.py",
    ]
    assert "{{" not in "".join((target / f).read_text() for f in files)
    pyproject = (target / "pyproject.toml").read_text()
    assert 'weather_station = "meith_weather_station.plugin:Plugin"' in pyproject
    assert '"meith-core>=0.1.0,<1"' in pyproject
    checked = meith("plugins", "check", str(target), env={"MEITH_HOME": str(tmp_path / "h")})
    assert checked.returncode == 0, checked.stdout
    assert checked.stdout.rstrip().endswith("checked 1 plugin: 0 errors, 0 warnings")
    plugin = target / "src" / "meith_weather_station" / "plugin.py"
    plugin.write_text(plugin.read_text().replace('grant_scope="enforced"', "grant_scope=None"))
    broken = meith("plugins", "check", str(target), env={"MEITH_HOME": str(tmp_path / "h")})
    assert broken.returncode == 1
    lines = broken.stdout.splitlines()
    assert lines[0].startswith("weather_station (meith-weather-station 0.1.0): FAILED - 2 tools")
    assert lines[1].startswith(
        "  error: tool weather_station_write_note: takes 'cwd' and declares writes-files"
    )
    assert lines[-1] == "checked 1 plugin: 1 error, 0 warnings"


@pytest.mark.slow
def test_check_passes_on_the_first_party_plugins(tmp_path: Path) -> None:
    done = meith("plugins", "check", "--json", env={"MEITH_HOME": str(tmp_path)})
    assert done.returncode == 0, done.stdout
    reports = {r["plugin"]: r for r in json.loads(done.stdout)}
    for pid in ("git", "process", "browser", "files"):
        assert reports[pid]["ok"] is True
        # only the import-time warning may depend on the machine
        assert [
            p for p in reports[pid]["problems"] if "importing the plugin took" not in p["message"]
        ] == []
