"""Fixtures of the core tests.

- `fixture_plugins_target` (session): builds `tests/fixtures/meith_fixture_plugins` and installs
  it with its entry points into a temporary `--target` directory, once per test session. It is
  never installed into the dev venv: every other test would discover its broken plugins.
- `fixture_plugins`: puts that directory on `sys.path` (and `PYTHONPATH` for subprocesses) for
  one test, and takes it away again afterwards.
- `scoped`: the `runtime` fixture with app tools that need grants (what the grant and call
  approval tests of policy/ and host/ call).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from meith_core import Runtime, ToolContext
from tests.core.support import CwdArgs, NoArgs, TextArgs, make_tool

FIXTURE_PACKAGE = Path(__file__).parents[1] / "fixtures" / "meith_fixture_plugins"
FIXTURE_MODULE = "meith_fixture_plugins"


def _uv() -> str | None:
    found = shutil.which("uv")
    if found is None:
        try:  # `pip install uv` also ships it as a module
            from uv import find_uv_bin  # type: ignore[import-not-found]

            found = find_uv_bin()
        except (ImportError, FileNotFoundError):
            return None
    return found


def _install_command(target: Path) -> list[str]:
    uv = _uv()
    if uv is not None:
        command = [uv, "pip", "install", "--python", sys.executable]
    else:  # a venv made by virtualenv/venv has pip; one made by uv has uv on PATH
        command = [sys.executable, "-m", "pip", "install"]
    return [*command, "--quiet", "--no-deps", "--target", str(target), str(FIXTURE_PACKAGE)]


@pytest.fixture(scope="session")
def fixture_plugins_target(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("fixture-plugins")
    done = subprocess.run(
        _install_command(target), capture_output=True, text=True, timeout=600, check=False
    )
    if done.returncode != 0:
        pytest.fail(
            f"installing the fixture plugin package failed ({' '.join(done.args)}); the tests "
            f"need uv on PATH or pip in this interpreter:\n{done.stdout}{done.stderr}"
        )
    assert (target / FIXTURE_MODULE).is_dir()
    return target


@pytest.fixture
def fixture_plugins(
    fixture_plugins_target: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """The fixture plugins are installed (discoverable) for the duration of one test."""
    monkeypatch.syspath_prepend(str(fixture_plugins_target))
    pythonpath = os.environ.get("PYTHONPATH")
    monkeypatch.setenv(
        "PYTHONPATH",
        os.pathsep.join(p for p in (str(fixture_plugins_target), pythonpath) if p),
    )
    try:
        yield fixture_plugins_target
    finally:
        for name in [m for m in sys.modules if m.split(".")[0] == FIXTURE_MODULE]:
            del sys.modules[name]


@pytest.fixture
def scoped(runtime: Runtime) -> Runtime:
    """App tools: write_a / write_b (writes-files), wipe (writes-files + destructive), read;
    each returns the grant scope it ran under."""

    async def write_a(ctx: ToolContext, args: TextArgs) -> Any:
        return {"scope": ctx.grant_scope}

    async def write_b(ctx: ToolContext, args: TextArgs) -> Any:
        return {"scope": ctx.grant_scope}

    async def write_in(ctx: ToolContext, args: CwdArgs) -> Any:
        return {"scope": ctx.grant_scope}

    async def wipe(ctx: ToolContext, args: NoArgs) -> str:
        return "wiped"

    async def read(ctx: ToolContext, args: NoArgs) -> str:
        return "read"

    runtime.register(
        [
            make_tool(write_a, "writes-files", input=TextArgs),
            make_tool(write_b, "writes-files", input=TextArgs),
            make_tool(write_in, "writes-files", input=CwdArgs, acts_on="path:cwd"),
            make_tool(wipe, "writes-files", "destructive"),
            make_tool(read),
        ]
    )
    return runtime
