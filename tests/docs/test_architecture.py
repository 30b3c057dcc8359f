"""docs/architecture.md names every module of meith_core, and only modules that exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "meith_core" / "src" / "meith_core"
DOC = ROOT / "docs" / "architecture.md"
#: A module named in the tree: a backticked path ending in `.py`, relative to the package.
NAMED = re.compile(r"^- `([a-z_/]+\.py)` — ", re.M)


def _is_docstring_only(path: Path) -> bool:
    body = ast.parse(path.read_text(encoding="utf-8")).body
    return len(body) == 1 and isinstance(body[0], ast.Expr)


def _modules() -> set[str]:
    """Every module of meith_core; a layer package's `__init__.py` that holds only its
    docstring is described by the layer's heading instead."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        if path.name == "__init__.py" and path.parent != PACKAGE and _is_docstring_only(path):
            continue
        found.add(path.relative_to(PACKAGE).as_posix())
    return found


def test_every_module_is_named_in_the_architecture_document() -> None:
    named = set(NAMED.findall(DOC.read_text(encoding="utf-8")))
    missing = sorted(_modules() - named)
    assert not missing, f"docs/architecture.md does not name: {missing}"


def test_the_architecture_document_names_no_module_that_does_not_exist() -> None:
    named = set(NAMED.findall(DOC.read_text(encoding="utf-8")))
    stale = sorted(m for m in named if not (PACKAGE / m).is_file())
    assert not stale, f"docs/architecture.md names modules that do not exist: {stale}"


def test_each_layer_package_has_a_heading_in_the_tree() -> None:
    text = DOC.read_text(encoding="utf-8")
    layers = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
    assert layers, "no layer packages found"
    for layer in layers:
        assert f"**{layer}/**" in text, layer
