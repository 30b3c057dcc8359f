#!/usr/bin/env python3
"""Install meith and its four plugins into a private virtual environment, one command.

    python3 install.py                 # ~/.local/share/meith/venv, `meith` linked in ~/.local/bin
    python3 install.py --prefix DIR    # the venv in DIR instead
    python3 install.py ./my-plugin     # add a plugin (a path or a package name) to that venv
    python3 install.py --dev           # this clone's dev environment, .venv: then `.venv/bin/nox`
    python3 install.py --uninstall     # stop its runtimes, remove the venv and the `meith` link

Stock Debian and Ubuntu Pythons refuse `pip install` outside a virtual environment (PEP 668):
this script makes one, installs the packages from this checkout into it (`meith-core` with its
MCP extra, the git, process, browser and files plugins), and links the `meith` command where the
shell finds it. Running it again upgrades in place. `--dev` makes `.venv` in the clone instead,
with every package editable and the dev tools (nox, uv, pytest, ruff, mypy) in it. Standard
library only; it needs Python 3.11.2 or newer with the `venv` module's `ensurepip` (on Debian
and Ubuntu, the python3-venv package).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGES = [
    f"{HERE / 'meith_core'}[mcp]",
    str(HERE / "meith_plugins_git"),
    str(HERE / "meith_plugins_process"),
    str(HERE / "meith_plugins_browser"),
    str(HERE / "meith_plugins_files"),
]
#: The oldest Python meith supports (Debian 12's own); CI runs the tests on it.
OLDEST = (3, 11, 2)
#: What a package argument names: a requirement's distribution name, before any extra or range.
_DIST_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _data_home() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def _say(message: str) -> None:
    print(f"meith: {message}", file=sys.stderr)


def _error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 1


def _python_is_usable() -> str | None:
    """Why this interpreter cannot make meith's environment, or None."""
    if sys.version_info < OLDEST:
        return (
            f"meith needs Python {'.'.join(map(str, OLDEST))} or newer; this is "
            f"{sys.version.split()[0]} ({sys.executable})"
        )
    if importlib.util.find_spec("ensurepip") is None:
        return (
            f"{sys.executable} has no ensurepip, so it cannot make a virtual environment with pip.\n"
            "On Debian/Ubuntu install the venv module first: sudo apt install python3-venv"
        )
    return None


def _make_venv(prefix: Path, clear: bool = False) -> str | None:
    """A venv with pip at `prefix`; the reason when it could not be made."""
    try:
        venv.EnvBuilder(with_pip=True, clear=clear, upgrade_deps=False).create(prefix)
    except (subprocess.CalledProcessError, OSError) as exc:
        return f"could not create a virtual environment in {prefix} ({exc})"
    return None


def _pip(python: Path, *args: str) -> int:
    return subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *args], check=False
    ).returncode


def _describe(python: Path) -> str:
    """`Python 3.11.2 (/usr/bin/python3.11)`: the venv's version and the interpreter under it."""
    done = subprocess.run(
        [
            str(python),
            "-c",
            "import os, sys; print(sys.version.split()[0], "
            "os.path.realpath(getattr(sys, '_base_executable', sys.executable)))",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    version, _, base = done.stdout.strip().partition(" ")
    return f"Python {version} ({base})" if done.returncode == 0 else str(python)


def _is_path(extra: str) -> bool:
    return Path(extra).exists() or extra.startswith((".", "/", "~"))


def _dist_of(extra: str) -> str | None:
    """The distribution a package argument installs: a project's `[project] name`, or the
    requirement's name."""
    if _is_path(extra):
        pyproject = Path(extra).expanduser() / "pyproject.toml"
        try:
            import tomllib

            name = tomllib.loads(pyproject.read_text())["project"]["name"]
        except (OSError, KeyError, TypeError, ValueError):
            return None
        return str(name)
    match = _DIST_NAME.match(extra)
    return match.group(1) if match else None


_PLUGINS_OF = """
import sys
from importlib import metadata
for name in sys.argv[1:]:
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        print(name, "-", "")
        continue
    ids = [e.name for e in dist.entry_points if e.group == "meith.plugins"]
    print(dist.metadata["Name"], dist.version, ",".join(ids))
"""


def _report_plugins(python: Path, extras: list[str]) -> None:
    """Name each installed package argument: its distribution, version and plugin ids."""
    names = [n for n in (_dist_of(e) for e in extras) if n]
    if not names:
        return
    done = subprocess.run(
        [str(python), "-c", _PLUGINS_OF, *names], capture_output=True, text=True, check=False
    )
    for line in done.stdout.splitlines():
        name, version, ids = line.split(" ", 2)
        if version == "-":
            continue
        if ids:
            plural = "s" if "," in ids else ""
            _say(
                f"installed {name} {version}: plugin{plural} {ids.replace(',', ', ')} "
                f"(`meith plugins` lists it; `meith plugins approve {ids.split(',')[0]}` "
                "allows its privileged tools)"
            )
        else:
            _say(f"installed {name} {version} (it registers no meith plugin)")


def install(prefix: Path, bin_dir: Path, extras: list[str]) -> int:
    python = prefix / "bin" / "python"
    fresh = not python.exists()
    if fresh:
        why = _python_is_usable()
        if why:
            return _error(why)
        _say(f"creating a virtual environment in {prefix}")
        why = _make_venv(prefix)
        if why:
            return _error(
                f"{why}.\nOn Debian/Ubuntu install the venv module first: "
                "sudo apt install python3-venv"
            )
    extras = [str(Path(e).expanduser().resolve()) if _is_path(e) else e for e in extras]
    has_core = (
        not fresh
        and subprocess.run(
            [str(python), "-c", "import meith_core"], capture_output=True, check=False
        ).returncode
        == 0
    )
    if extras and has_core:
        # Only what was asked for: meith itself stays as it is (run without arguments to
        # upgrade it). meith-core is already there, so a plugin's dependency on it is met.
        _say(f"installing {', '.join(extras)} into {prefix}")
        packages = extras
    else:
        _say("installing meith-core and the git, process, browser and files plugins")
        packages = [*PACKAGES, *extras]
    if _pip(python, "--upgrade", *packages) != 0:
        return _error("pip could not install the packages (see above)")
    _report_plugins(python, extras)

    bin_dir.mkdir(parents=True, exist_ok=True)
    link = bin_dir / "meith"
    target = prefix / "bin" / "meith"
    if link.is_symlink() or not link.exists():
        link.unlink(missing_ok=True)
        link.symlink_to(target)
    elif link.resolve() != target.resolve():
        print(f"warning: {link} exists and is not meith's; run {target} directly", file=sys.stderr)
    on_path = str(bin_dir) in os.environ.get("PATH", "").split(os.pathsep)
    _say(f"installed; the command is {link}")
    _say(
        f"meith's Python is {python} ({_describe(python)}): use it for Python that imports "
        f"meith_core, and `python3 install.py PACKAGE` (or `{python} -m pip install PACKAGE`) "
        "to add a plugin"
    )
    if not on_path:
        print(
            f'note: {bin_dir} is not on your PATH; add it (export PATH="{bin_dir}:$PATH")',
            file=sys.stderr,
        )
    return 0


def uninstall(prefix: Path, bin_dir: Path) -> int:
    """Undo `install`: stop the runtimes, remove the venv and the `meith` link. What the user
    made with meith (the home: grants, approvals, the audit trail, settings) stays."""
    if not (prefix / "pyvenv.cfg").is_file():
        if prefix.exists():
            return _error(f"{prefix} is not a virtual environment: nothing removed")
        _say(f"no meith environment in {prefix}")
    else:
        meith = prefix / "bin" / "meith"
        if meith.exists():
            _say("stopping the running meith runtimes (meith stop --all)")
            subprocess.run([str(meith), "stop", "--all"], capture_output=True, check=False)
        shutil.rmtree(prefix)
        _say(f"removed {prefix}")
    link = bin_dir / "meith"
    if link.is_symlink() and Path(os.readlink(link)) == prefix / "bin" / "meith":
        link.unlink()
        _say(f"removed {link}")
    elif link.exists() or link.is_symlink():
        print(f"warning: {link} is not the link this script made; left as it is", file=sys.stderr)
    home = os.environ.get("MEITH_HOME") or str(Path.home() / ".meith")
    _say(
        f"kept {home}: your grants, plugin approvals, settings and the audit trail (remove it "
        "yourself when you no longer want them), and any MCP client configuration that runs "
        "`meith mcp` (remove meith from it there)"
    )
    return 0


def _same_python(python: Path) -> bool:
    """Whether the venv at `python` runs on this very interpreter (same base, same version)."""
    done = subprocess.run(
        [str(python), "-c", "import sys; print(sys.base_prefix, sys.version)"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode == 0 and done.stdout.strip() == f"{sys.base_prefix} {sys.version}"


def dev() -> int:
    """`.venv` in this clone on this interpreter, as `uv sync` makes it (uv comes from pip)."""
    why = _python_is_usable()
    if why:
        return _error(why)
    env_dir = HERE / ".venv"
    python = env_dir / "bin" / "python"
    uv = env_dir / "bin" / "uv"
    if not (uv.exists() and _same_python(python)):
        if python.exists():
            _say(f"{env_dir} is {_describe(python)}: making it again on this Python")
        else:
            _say(f"creating the dev environment in {env_dir}")
        why = _make_venv(env_dir, clear=env_dir.exists())
        if why:
            return _error(why)
        if _pip(python, "--disable-pip-version-check", "uv") != 0:
            return _error("pip could not install uv (see above)")
    env = {
        k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")
    }
    # Every package editable and the dev group (nox with uv, pytest, ruff, mypy), from uv.lock.
    done = subprocess.run(
        [str(uv), "sync", "--quiet", "--python", str(python)], cwd=HERE, env=env, check=False
    )
    if done.returncode != 0:
        return _error("uv sync could not make the dev environment (see above)")
    _say(f"dev environment ready: {env_dir} ({_describe(python)})")
    _say(
        "the whole suite: .venv/bin/nox (lint, types, every test: several minutes); "
        "the fast loop: .venv/bin/nox -s tests -- -m 'not slow'"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "extra", nargs="*", help="packages (paths or names) to add to meith's environment"
    )
    parser.add_argument("--prefix", type=Path, default=_data_home() / "meith" / "venv")
    parser.add_argument("--bin-dir", type=Path, default=Path.home() / ".local" / "bin")
    parser.add_argument(
        "--dev",
        action="store_true",
        help="make this clone's dev environment (.venv) instead, for `.venv/bin/nox`",
    )
    parser.add_argument(
        "--uninstall",
        action="store_true",
        help="stop meith's runtimes and remove its environment and the `meith` link "
        "(your meith home stays)",
    )
    args = parser.parse_args(argv)
    if args.uninstall:
        if args.extra or args.dev:
            parser.error("--uninstall takes no packages and no --dev")
        return uninstall(args.prefix.expanduser().resolve(), args.bin_dir.expanduser())
    if args.dev:
        if args.extra:
            parser.error("--dev takes no packages")
        return dev()
    return install(args.prefix.expanduser().resolve(), args.bin_dir.expanduser(), args.extra)


if __name__ == "__main__":
    sys.exit(main())
