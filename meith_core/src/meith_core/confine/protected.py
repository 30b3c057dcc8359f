"""What no agent's tool and no confined process ever writes, in one rule: every meith home and
the registry of homes (the trust root of every runtime of the user), meith's installation (the
environment it runs in, the `meith_core` package, every plugin's package, every directory an
editable install's `.pth` file adds, the `meith` command), and git's metadata (hooks and
program-valued config run later, as the user). The confinement plan carves these out of what a
confined process may write; the files tools refuse them to every caller."""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import site
import sys
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Final

from meith_core.base.home_registry import known_homes, registry_dir
from meith_core.base.paths import resolved_within
from meith_core.confine.gitdirs import git_metadata_containing

#: The entry-point group plugins register in (their packages are part of the installation).
_PLUGIN_GROUP: Final = "meith.plugins"
#: Packages of plugins loaded into this process (`protect_package`), beyond the discovered.
_loaded: set[str] = set()


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a path may not be written: a short `reason` (for details) and the whole message."""

    reason: str
    message: str
    #: The protected path the written one lies in.
    within: str


def protect_package(module_name: str) -> None:
    """Count the top-level package of `module_name` (a loaded plugin's) as meith's
    installation."""
    location = _package_dir(module_name.split(".", 1)[0])
    if location is not None:
        _loaded.add(location)


def _package_dir(top: str) -> str | None:
    module = sys.modules.get(top)
    paths = list(getattr(module, "__path__", []) or []) if module is not None else []
    if module is not None and not paths and getattr(module, "__file__", None):
        paths = [os.path.dirname(str(module.__file__))]
    if not paths:
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            return None
        if spec is None:
            return None
        if spec.submodule_search_locations:
            paths = list(spec.submodule_search_locations)
        elif spec.origin and os.path.isabs(spec.origin):
            paths = [os.path.dirname(spec.origin)]
    return os.path.realpath(paths[0]) if paths else None


def _pth_directories() -> list[str]:
    """Directories that `.pth` files of this environment add (editable installs)."""
    dirs = [*site.getsitepackages(), site.getusersitepackages()]
    found: list[str] = []
    for site_dir in dirs:
        try:
            names = sorted(n for n in os.listdir(site_dir) if n.endswith(".pth"))
        except OSError:
            continue
        for name in names:
            try:
                text = Path(site_dir, name).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            for line in text.splitlines():
                line = line.strip()
                if not line or line.startswith(("#", "import ", "import\t")):
                    continue
                path = os.path.realpath(os.path.join(site_dir, line))
                if os.path.isdir(path):
                    found.append(path)
    return found


@functools.cache
def _discovered() -> tuple[str, ...]:
    paths = [os.path.realpath(sys.prefix), str(Path(__file__).resolve().parents[1])]
    try:
        groups = entry_points(group=_PLUGIN_GROUP)
    except Exception:  # a broken distribution's metadata must not break confinement
        groups = ()  # type: ignore[assignment]
    for ep in groups:
        location = _package_dir(ep.module.split(".", 1)[0])
        if location is not None:
            paths.append(location)
    paths += _pth_directories()
    command = shutil.which("meith")
    if command is not None:
        paths.append(os.path.abspath(command))
    # Never the file system's root or the user's home itself (a stray `.pth` line).
    forbidden = {"/", os.path.realpath(Path.home())}
    return tuple(p for p in dict.fromkeys(paths) if p not in forbidden)


def installation_paths() -> tuple[str, ...]:
    """meith's installation, resolved (a link like `~/.local/bin/meith` as the link itself)."""
    return tuple(dict.fromkeys([*_discovered(), *sorted(_loaded)]))


def meith_homes(home: str | os.PathLike[str] | None = None) -> list[str]:
    """Every meith home of the user (and `home`), and the registry of homes, resolved."""
    homes = [*known_homes(), str(registry_dir())]
    if home is not None:
        homes.insert(0, os.fspath(home))
    return list(dict.fromkeys(os.path.realpath(h) for h in homes))


def protected_paths(home: str | os.PathLike[str] | None = None) -> list[str]:
    """Every path that is never writable: the homes and meith's installation."""
    return list(dict.fromkeys([*meith_homes(home), *installation_paths()]))


def write_refusal(
    path: str, root: str, *, home: str | os.PathLike[str] | None = None
) -> Refusal | None:
    """Why `path` (resolved, at or beneath the resolved `root`) may not be written, or None."""
    for protected in meith_homes(home):
        if resolved_within(path, protected):
            return Refusal(
                "meith home",
                f"{path} is inside a meith home ({protected}), which no tool writes",
                protected,
            )
    for protected in installation_paths():
        if resolved_within(path, protected):
            return Refusal(
                "meith installation",
                f"{path} is part of meith's installation ({protected}), which no tool writes",
                protected,
            )
    gitdir = git_metadata_containing(root, path)
    if gitdir is not None:
        return Refusal(
            "git metadata",
            f"{path} is inside git's metadata ({gitdir}); change a repository with the git tools",
            gitdir,
        )
    return None


__all__ = [
    "Refusal",
    "installation_paths",
    "meith_homes",
    "protect_package",
    "protected_paths",
    "write_refusal",
]
