from __future__ import annotations

from dataclasses import dataclass

import pytest

from meith_core import Runtime
from meith_plugins_process.plugin import Plugin


@dataclass
class Proc:
    rt: Runtime
    plugin: Plugin


@pytest.fixture(autouse=True)
def isolated_shell_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shells started by these tests must not run the machine's ~/.bashrc: it may do slow or
    locking work (pyenv's rehash takes a lock that a shell killed mid-start leaves behind)."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for var in ("ENV", "BASH_ENV"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
async def proc(runtime: Runtime) -> Proc:
    """The runtime fixture with the process plugin loaded and approved."""
    record = runtime.load_plugin("process", Plugin)
    assert record.status == "loaded", record.reason
    runtime.approve_plugin("process")
    return Proc(runtime, record.obj)
