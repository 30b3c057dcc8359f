"""docs/architecture.md names every module of meith_core and of the first-party plugins, and
only modules that exist; no module of theirs is over 450 lines."""

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
