"""Finding imports of meith_core's internal modules in a plugin's source (standard library only).

Plugins may import `meith_core`, `meith_core.client` and, in tests, `meith_core.testing`; the
layer packages (`meith_core.protocol`, `.call`, `.policy`, `.audit`, `.host`, `.serve`, ...)
and every `_`-prefixed module may change without notice. Used by `meith plugins check` and by
the repository's lint.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

#: The layer packages: internal, whatever their names look like.
INTERNAL_PACKAGES = frozenset(
    {"base", "protocol", "call", "policy", "audit", "host", "serve", "cli", "mcp"}
)


def is_private(module: str) -> bool:
    parts = module.split(".")
    if parts[0] != "meith_core" or len(parts) == 1:
        return False
    return parts[1] in INTERNAL_PACKAGES or any(p.startswith("_") for p in parts[1:])


def private_imports(path: Path) -> Iterator[tuple[int, str]]:
    """`(line, module)` for each import of an internal meith_core module in one file."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            if is_private(name):
                yield node.lineno, name
                break


def scan(root: Path) -> list[str]:
    """One line per private import under `root` (a directory or a single file)."""
    files = [root] if root.is_file() else sorted(root.rglob("*.py"))
    return [
        f"{path}:{line}: imports {name}; plugins may import only meith_core, meith_core.client and meith_core.testing"
        for path in files
        for line, name in private_imports(path)
    ]
