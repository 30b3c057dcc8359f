"""Fail when a first-party plugin imports a private module of meith_core (`nox -s lint`).

Arguments are directories to scan (default: the three first-party plugins' sources). The
scanner is the one `meith plugins check` uses; it needs only the standard library.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "meith_core" / "src"))

from meith_core.host.plugins.imports import scan  # noqa: E402 - after the path is set

DEFAULT_DIRS = [ROOT / f"meith_plugins_{name}" / "src" for name in ("git", "process", "browser")]


def main(argv: list[str]) -> int:
    dirs = [Path(a) for a in argv] or DEFAULT_DIRS
    problems = [line for d in dirs for line in scan(d)]
    print("\n".join(problems) or f"plugin imports ok ({len(dirs)} directories)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
