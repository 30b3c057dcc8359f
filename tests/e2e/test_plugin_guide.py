"""docs/plugin-guide.md stays true: its Python blocks run (test files under pytest, the rest as
programs whose plugins must pass `meith plugins check`'s checks), its hook and ToolContext
references match the code, and its file listing matches the scaffold. Its shell blocks are the
tutorial, run in a fresh venv by test_plugin_author.py."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from meith_core import ToolContext, ToolDefinition
from meith_core.host.plugins import hookspecs
from meith_core.host.plugins.check import PluginReport, check_hooks, check_tool
from meith_core.host.plugins.scaffold import scaffold

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "plugin-guide.md"
README = GUIDE.parents[1] / "README.md"


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", GUIDE.read_text(), flags=re.S)


def section(title: str) -> str:
    return GUIDE.read_text().split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


PROGRAMS = [b for b in blocks("python") if "def test_" not in b]
TEST_FILES = [b for b in blocks("python") if "def test_" in b]


def test_every_block_is_of_a_kind_the_tests_run() -> None:
    langs = re.findall(r"^```(\w*)$", GUIDE.read_text(), flags=re.M)
    opening = langs[::2]
    assert set(opening) <= {"python", "sh", "text"}, opening
    assert len(PROGRAMS) >= 4
    assert len(TEST_FILES) == 1


@pytest.mark.parametrize("index", range(len(PROGRAMS)))
def test_each_program_runs_and_its_plugin_passes_the_checks(index: int, tmp_path: Path) -> None:
    module = types.ModuleType(f"guide_block_{index}")
    sys.modules[module.__name__] = module
    try:
        exec(compile(PROGRAMS[index], f"plugin-guide block {index}", "exec"), module.__dict__)
        plugin_class = module.__dict__.get("Plugin")
        if plugin_class is None:
            return
        report = PluginReport(module.__name__)
        plugin = plugin_class()
        for definition in plugin.meith_tools():
            assert isinstance(definition, ToolDefinition)
            check_tool(report, definition)
        check_hooks(report, plugin)
        errors = [m for level, m in report.problems if level == "error"]
        assert errors == []
    finally:
        del sys.modules[module.__name__]


@pytest.mark.slow  # a pytest of its own in a subprocess
def test_the_test_file_passes_under_pytest_with_the_meith_fixture(tmp_path: Path) -> None:
    (tmp_path / "test_guide.py").write_text(TEST_FILES[0])
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_guide.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout


def test_the_hook_reference_matches_the_hookspecs() -> None:
    table = section("Hook reference")
    documented = dict(re.findall(r"^\| `(meith_\w+)\(([^)]*)\)` \|", table, flags=re.M))
    specs = {
        name: fn
        for name, fn in vars(hookspecs).items()
        if name.startswith("meith_") and callable(fn)
    }
    assert set(documented) == set(specs)
    for name, fn in specs.items():
        params = [p.strip() for p in documented[name].split(",") if p.strip()]
        assert params == list(inspect.signature(fn).parameters), name
        firstresult = fn.meith_spec["firstresult"]  # type: ignore[attr-defined]
        assert firstresult == (name == "meith_approve")
    assert "`meith_approve(request)` | a privileged call no grant covers (`firstresult`" in table


def test_the_tool_context_reference_lists_every_public_member() -> None:
    table = section("ToolContext reference")
    documented = set(re.findall(r"`(\w+)(?:\(|`)", table))
    public = {n for n in dir(ToolContext) if not n.startswith("_")}
    instance_attrs = {"caller", "request_id", "tool_name", "plugin_id", "home", "grant_scope"}
    assert public | instance_attrs <= documented


def test_the_file_listing_matches_the_scaffold(tmp_path: Path) -> None:
    _, target, _ = scaffold("weather", tmp_path / "meith-weather")
    (listing,) = blocks("text")
    paths = [tok for tok in listing.split() if "." in tok and not tok.startswith("`")]
    paths = [p for p in paths if not p.endswith(",")]
    assert "src/meith_weather/plugin.py" in paths
    for path in paths:
        assert (target / path).exists(), path


def test_the_readme_and_the_plugin_page_link_the_guide() -> None:
    assert "(docs/plugin-guide.md)" in README.read_text()
    writing = (GUIDE.parent / "plugins.md").read_text()
    assert "(plugin-guide.md)" in writing.split("\n## ", 1)[0]
