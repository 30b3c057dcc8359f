"""Fail when a plugin imports a private module of meith_core.

Plugins may import `meith_core` and, in tests, `meith_core.testing`; every `meith_core._*`
module may change without notice. Run by `nox -s lint`; arguments are directories to scan
(default: the three first-party plugins' sources).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DIRS = [
    ROOT / "meith_plugins_git" / "src",
    ROOT / "meith_plugins_process" / "src",
    ROOT / "meith_plugins_browser" / "src",
]


def _is_private(module: str) -> bool:
    parts = module.split(".")
    return parts[0] == "meith_core" and any(p.startswith("_") for p in parts[1:])


def private_imports(path: Path) -> Iterator[tuple[int, str]]:
    """`(line, module)` for each import of a `meith_core._*` module."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            if _is_private(name):
                yield node.lineno, name
                break


def main(argv: list[str]) -> int:
    dirs = [Path(a) for a in argv] or DEFAULT_DIRS
    problems = [
        f"{path}:{line}: imports {name}; plugins may import only meith_core and meith_core.testing"
        for d in dirs
        for path in sorted(d.rglob("*.py"))
        for line, name in private_imports(path)
    ]
    print("\n".join(problems) or f"plugin imports ok ({len(dirs)} directories)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
