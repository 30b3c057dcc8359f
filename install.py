#!/usr/bin/env python3
"""Install meith and its four plugins into a private virtual environment, one command.

    python3 install.py                 # ~/.local/share/meith/venv, `meith` linked in ~/.local/bin
    python3 install.py --prefix DIR    # the venv in DIR instead
    python3 install.py ./my-plugin     # also install a plugin (a path or a PyPI name)

Stock Debian and Ubuntu Pythons refuse `pip install` outside a virtual environment (PEP 668):
this script makes one, installs the packages from this checkout into it (`meith-core` with its
MCP extra, the git, process, browser and files plugins), and links the `meith` command where the
shell finds it. Running it again upgrades in place. Standard library only.
"""

from __future__ import annotations

import argparse
import os
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


def _data_home() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "extra", nargs="*", help="more packages to install into meith's environment"
    )
    parser.add_argument("--prefix", type=Path, default=_data_home() / "meith" / "venv")
    parser.add_argument("--bin-dir", type=Path, default=Path.home() / ".local" / "bin")
    args = parser.parse_args(argv)

    prefix: Path = args.prefix.expanduser().resolve()
    python = prefix / "bin" / "python"
    if not python.exists():
        print(f"meith: creating a virtual environment in {prefix}", file=sys.stderr)
        try:
            venv.EnvBuilder(with_pip=True, upgrade_deps=False).create(prefix)
        except (subprocess.CalledProcessError, OSError) as exc:
            print(
                f"error: could not create a virtual environment ({exc}).\n"
                "On Debian/Ubuntu install the venv module first: sudo apt install python3-venv",
                file=sys.stderr,
            )
            return 1
    extras = [str(Path(e).resolve()) if Path(e).exists() else e for e in args.extra]
    print(
        "meith: installing meith-core and the git, process, browser and files plugins",
        file=sys.stderr,
    )
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--upgrade", *PACKAGES, *extras],
        check=False,
    )
    if done.returncode != 0:
        print("error: pip could not install the packages (see above)", file=sys.stderr)
        return done.returncode

    bin_dir: Path = args.bin_dir.expanduser()
    bin_dir.mkdir(parents=True, exist_ok=True)
    link = bin_dir / "meith"
    target = prefix / "bin" / "meith"
    if link.is_symlink() or not link.exists():
        link.unlink(missing_ok=True)
        link.symlink_to(target)
    elif link.resolve() != target.resolve():
        print(f"warning: {link} exists and is not meith's; run {target} directly", file=sys.stderr)
    on_path = str(bin_dir) in os.environ.get("PATH", "").split(os.pathsep)
    print(f"meith: installed; the command is {link}", file=sys.stderr)
    if not on_path:
        print(
            f'note: {bin_dir} is not on your PATH; add it (export PATH="{bin_dir}:$PATH")',
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
