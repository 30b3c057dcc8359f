"""`Runtime.load_new_plugins`: plugins installed after discovery, in process."""

from __future__ import annotations

from pathlib import Path

import pytest

from meith_core import MeithHome, Runtime
from tests.server.late_plugin import install_late as _install

pytestmark = pytest.mark.anyio


async def test_a_plugin_installed_after_start_is_loaded_started_and_callable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("LATE_MARKERS", str(tmp_path))
    async with Runtime(MeithHome(tmp_path / "home"), plugin_allow={"late"}) as rt:
        assert rt.load_new_plugins() == []  # nothing installed since: a few stats, no scan
        _install(site)
        assert "late_hello" in {t["name"] for t in rt.tool_listing()}
        assert rt.load_new_plugins() == []  # loaded once
        result = await rt.call("late_hello")
        assert result.content == {"hello": "late", "started": True}
        assert (tmp_path / "started").read_text() == "yes"


async def test_a_runtime_without_installed_plugins_never_scans(tmp_path: Path) -> None:
    async with Runtime(MeithHome(tmp_path / "home"), load_plugins=False) as rt:
        assert rt.load_new_plugins(force=True) == []
