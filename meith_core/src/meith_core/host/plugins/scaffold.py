"""`meith plugins new NAME`: write a complete plugin distribution from the template files
shipped in this package (`_plugins/template/*.tmpl`)."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from importlib import metadata, resources
from importlib.resources.abc import Traversable
from pathlib import Path
from urllib.parse import unquote, urlparse

from meith_core._version import __version__

_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,38}[a-z0-9]$|^[a-z]$")


class ScaffoldError(ValueError):
    """The name or the target directory cannot be used; the message says why."""


@dataclass(frozen=True)
class Names:
    id: str
    package: str
    distribution: str

    @classmethod
    def from_name(cls, name: str) -> Names:
        lowered = name.strip().lower()
        if not _NAME.fullmatch(lowered):
            raise ScaffoldError(
                f"{name!r} is not a usable plugin name: use lowercase letters, digits, '-' or '_', "
                "starting with a letter (e.g. weather or issue-tracker)"
            )
        plugin_id = lowered.replace("-", "_")
        return cls(plugin_id, f"meith_{plugin_id}", f"meith-{plugin_id.replace('_', '-')}")


def core_requirement() -> str:
    """The meith-core range a new plugin depends on: this release up to the next major."""
    major = int(__version__.split(".")[0])
    return f"meith-core>={__version__},<{max(major + 1, 1)}"


def core_source() -> str:
    """Where a new plugin's dev tools install meith-core from. meith-core is not on PyPI: this
    is the directory the running meith-core was installed from (a clone's `meith_core`, by
    `install.py` or `uv sync`), else the release range."""
    try:
        raw = metadata.distribution("meith-core").read_text("direct_url.json")
        url = json.loads(raw or "{}").get("url", "")
    except (metadata.PackageNotFoundError, ValueError, AttributeError):
        url = ""
    if isinstance(url, str) and url.startswith("file://"):
        path = Path(unquote(urlparse(url).path))
        if (path / "pyproject.toml").is_file():
            return str(path)
    return core_requirement()


def meith_environment() -> Path | None:
    """The virtual environment meith runs in (where a plugin is installed next to it), or None
    when meith is not in one."""
    return Path(sys.prefix) if sys.prefix != sys.base_prefix else None


def _template_files(root: Traversable, prefix: str = "") -> list[tuple[str, Traversable]]:
    out: list[tuple[str, Traversable]] = []
    for item in sorted(root.iterdir(), key=lambda t: t.name):
        rel = f"{prefix}{item.name}"
        if item.is_dir():
            if item.name != "__pycache__":
                out += _template_files(item, rel + "/")
        elif item.name.endswith(".tmpl"):
            out.append((rel.removesuffix(".tmpl"), item))
    return out


def scaffold(name: str, directory: Path | None = None) -> tuple[Names, Path, list[Path]]:
    """Write the plugin project; returns its names, its directory and the files written."""
    names = Names.from_name(name)
    target = directory if directory is not None else Path.cwd() / names.distribution
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ScaffoldError(f"{target} already exists and is not empty; choose another --dir")
    values = {
        "id": names.id,
        "package": names.package,
        "distribution": names.distribution,
        "core_requirement": core_requirement(),
        "core_source": core_source(),
    }
    written: list[Path] = []
    for rel, source in _template_files(resources.files("meith_core.host.plugins") / "template"):
        rel_path = rel.replace("PACKAGE", names.package)
        if rel_path == "gitignore":
            rel_path = ".gitignore"
        text = source.read_text(encoding="utf-8")
        for key, value in values.items():
            text = text.replace("{{" + key + "}}", value)
        dest = target / rel_path
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
        written.append(dest)
    return names, target, written
