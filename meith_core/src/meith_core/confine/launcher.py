"""How the exec wrapper is started: its package compiled once into a private directory, and
the command line and fixed environment every confined spawn begins with.

A script run by path is compiled on every start (as long as a Python start-up again on a
loaded machine); sourceless `.pyc` modules are not. They are kept in the per-user 0700
directory under /tmp (`base.home_registry.user_tmp_dir`, which confined processes can neither
write nor see), in a directory named by a hash of the sources and the interpreter's magic
number, made whole in a temporary directory and renamed into place.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import os
import py_compile
import shutil
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from meith_core.base.home_registry import user_tmp_dir
from meith_core.confine.wrapper import environment

_PACKAGE: Final = Path(__file__).parent / "wrapper"
#: The directory holding the `meith_core` package (for the uncompiled fallback).
_SOURCE_ROOT: Final = str(Path(__file__).parents[2])
#: The compiled package's name, beside the entry script.
_COMPILED_NAME: Final = "meith_confine"
_ENTRY: Final = (
    "import sys\n"
    "sys.path.insert(0, __file__.rpartition('/')[0])\n"
    f"from {_COMPILED_NAME}.main import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)
_FALLBACK: Final = (
    f"import sys; sys.path.insert(0, {_SOURCE_ROOT!r}); "
    "from meith_core.confine.wrapper.main import main; sys.exit(main(sys.argv[1:]))"
)


def private_dir(path: Path, mode: int = 0o700) -> None:
    """`path` as a directory of this user that no one else can enter (made if missing; never a
    symlink), with `mode` (0300: entered by name only, not listed)."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise OSError(f"{path} is not a private directory of this user; remove it")
    if stat.S_IMODE(st.st_mode) != mode:
        os.chmod(path, mode)


def _sources() -> list[Path]:
    return sorted(p for p in _PACKAGE.iterdir() if p.suffix == ".py")


@functools.cache
def compiled_entry() -> str | None:
    """The compiled wrapper's entry script, made on first use; None when it cannot be made."""
    try:
        sources = _sources()
        digest = hashlib.sha256(importlib.util.MAGIC_NUMBER + _ENTRY.encode())
        for path in sources:
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
        tag = digest.hexdigest()[:20]
        code = user_tmp_dir() / "code"
        private_dir(code.parent)
        private_dir(code)
        target = code / f"confine-{tag}"
        entry = target / "run.pyc"
        if not entry.exists():
            _build(code, target, sources)
        return str(entry)
    except (OSError, py_compile.PyCompileError):
        return None


def _build(code: Path, target: Path, sources: list[Path]) -> None:
    partial = code / f".{target.name}.{os.getpid()}.tmp"
    shutil.rmtree(partial, ignore_errors=True)
    package = partial / _COMPILED_NAME
    os.makedirs(package, 0o700)
    try:
        for path in sources:
            py_compile.compile(str(path), cfile=str(package / f"{path.stem}.pyc"), doraise=True)
        script = partial / "run.py"
        script.write_text(_ENTRY)
        py_compile.compile(str(script), cfile=str(partial / "run.pyc"), doraise=True)
        script.unlink()
        try:
            os.rename(partial, target)
        except OSError:
            if not (target / "run.pyc").exists():
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def wrapper_argv() -> list[str]:
    """The interpreter and wrapper every confined command line starts with."""
    entry = compiled_entry()
    if entry is None:
        return [sys.executable, "-I", "-S", "-B", "-c", _FALLBACK]
    return [sys.executable, "-I", "-S", "-B", entry]


def wrapper_environment(markers: Mapping[str, str] | None = None) -> dict[str, str]:
    """The fixed environment to start the exec wrapper with (plus `MEITH_*` `markers`)."""
    return environment.fixed_environment(dict(markers or {}))


__all__ = ["compiled_entry", "private_dir", "wrapper_argv", "wrapper_environment"]
