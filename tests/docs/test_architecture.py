"""docs/architecture.md names every module of meith_core and of the first-party plugins, and
only modules that exist; no module of theirs is over 450 lines; and the tests mirror the
modules: each test file is named after a module of the package its folder stands for."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "meith_core" / "src" / "meith_core"
DOC = ROOT / "docs" / "architecture.md"
#: The first-party plugins: each a distribution with its package under `src/`.
PLUGINS = sorted(p.name for p in ROOT.glob("meith_plugins_*") if (p / "src" / p.name).is_dir())
#: A module named in the tree: a backticked path ending in `.py`, relative to meith_core's
#: package, or to a plugin's `src/` (`meith_plugins_git/tools.py`).
NAMED = re.compile(r"^- `([a-z_/]+\.py)` — ", re.M)
#: The longest a module may be: one job, readable in one sitting.
MAX_LINES = 450


def _is_docstring_only(path: Path) -> bool:
    body = ast.parse(path.read_text(encoding="utf-8")).body
    return len(body) == 1 and isinstance(body[0], ast.Expr)


def _source(name: str) -> Path:
    """The file a module named in the document is."""
    head, _, rest = name.partition("/")
    if head in PLUGINS:
        return ROOT / head / "src" / head / rest
    return PACKAGE / name


def _modules() -> set[str]:
    """Every module of meith_core and of the plugins, as the document names them; a
    subpackage's `__init__.py` that holds only its docstring is described by its heading
    instead."""
    found = set()
    for package, prefix in [(PACKAGE, ""), *((ROOT / p / "src" / p, f"{p}/") for p in PLUGINS)]:
        for path in package.rglob("*.py"):
            if path.name == "__init__.py" and path.parent != package and _is_docstring_only(path):
                continue
            found.add(prefix + path.relative_to(package).as_posix())
    return found


def _named() -> set[str]:
    return set(NAMED.findall(DOC.read_text(encoding="utf-8")))


def test_the_plugins_are_found() -> None:
    assert PLUGINS == [
        "meith_plugins_browser",
        "meith_plugins_files",
        "meith_plugins_git",
        "meith_plugins_process",
    ]


def test_every_module_is_named_in_the_architecture_document() -> None:
    missing = sorted(_modules() - _named())
    assert not missing, f"docs/architecture.md does not name: {missing}"


def test_the_architecture_document_names_no_module_that_does_not_exist() -> None:
    stale = sorted(m for m in _named() if not _source(m).is_file())
    assert not stale, f"docs/architecture.md names modules that do not exist: {stale}"


def test_each_layer_package_has_a_heading_in_the_tree() -> None:
    text = DOC.read_text(encoding="utf-8")
    layers = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
    assert layers, "no layer packages found"
    for layer in layers:
        assert f"**{layer}/**" in text, layer


def test_no_module_is_over_450_lines() -> None:
    sources = [PACKAGE.parent, *(ROOT / p / "src" for p in PLUGINS)]
    lines = {
        path: len(path.read_text(encoding="utf-8").splitlines())
        for source in sources
        for path in source.rglob("*.py")
    }
    over = sorted(f"{p.relative_to(ROOT)} ({n} lines)" for p, n in lines.items() if n > MAX_LINES)
    assert not over, f"modules over {MAX_LINES} lines (split them by job): {over}"


#: Where the tests of each package live: meith_core's under tests/core/, a plugin's under
#: tests/<id>/ (the plugin `meith_plugins_git` is `git`).
TESTS = ROOT / "tests"


def _test_roots() -> list[tuple[Path, Path]]:
    roots = [(TESTS / "core", PACKAGE)]
    roots += [(TESTS / p.removeprefix("meith_plugins_"), ROOT / p / "src" / p) for p in PLUGINS]
    return roots


def _names(package: Path) -> set[str]:
    """What a test file of `package` may be named after: its modules and subpackages, with the
    underscores around a name dropped (`__init__.py` is `init`, `_core.py` is `core`)."""
    modules = {p.stem for p in package.glob("*.py")}
    packages = {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    return {name.strip("_") for name in modules | packages}


def _misnamed(tests: Path, package: Path, base: Path = ROOT) -> list[str]:
    wrong = []
    for path in sorted(tests.rglob("test_*.py")):
        source = package / path.parent.relative_to(tests)
        where = f"{path.relative_to(base)}: "
        if not (source / "__init__.py").is_file():
            wrong.append(f"{where}{source.relative_to(base)} is no package")
            continue
        stem = path.stem.removeprefix("test_")
        if not any(stem == name or stem.startswith(f"{name}_") for name in _names(source)):
            wrong.append(f"{where}no module {stem!r} in {source.relative_to(base)}")
    return wrong


def test_the_tests_mirror_the_modules_they_test() -> None:
    """tests/core/<layer>/test_<module>[_<aspect>].py tests meith_core/<layer>/<module>.py, and
    tests/<plugin>/test_<module>[_<aspect>].py a plugin's module: the tests of a module are
    found where the module is."""
    roots = _test_roots()
    assert [t.name for t, _ in roots] == ["core", "browser", "files", "git", "process"]
    wrong = [w for tests, package in roots for w in _misnamed(tests, package)]
    assert not wrong, "test files named after no module of their package:\n" + "\n".join(wrong)


def test_the_mirror_check_refuses_a_test_named_after_nothing(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "layer").mkdir(parents=True)
    for name in ("__init__.py", "layer/__init__.py", "layer/call_approval.py", "layer/_core.py"):
        (package / name).write_text("")
    tests = tmp_path / "tests"
    (tests / "layer").mkdir(parents=True)
    (tests / "other").mkdir()
    for name in (
        "test_init.py",
        "layer/test_call_approval.py",
        "layer/test_call_approval_desk.py",
        "layer/test_core.py",
        "layer/test_call.py",
        "other/test_x.py",
    ):
        (tests / name).write_text("")
    assert _misnamed(tests, package, base=tmp_path) == [
        "tests/layer/test_call.py: no module 'call' in pkg/layer",
        "tests/other/test_x.py: pkg/other is no package",
    ]
