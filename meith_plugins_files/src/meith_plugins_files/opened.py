"""A workspace path opened once, through the workspace's descriptor, and checked as opened.

The tools resolve a caller's path by name (`scope.resolve`: links inside the workspace taken to
their targets, containment decided), then act only through descriptors the core opens beneath
the workspace (`meith_core.Beneath`: no link followed, nothing outside reached). Who may read
or write it is decided on the object opened — its real path, read back from the descriptor —
so a directory swapped for a link between the two is refused, never followed.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from meith_core import (
    Beneath,
    ErrorCode,
    PathEscapeError,
    ToolContext,
    ToolError,
    real_path,
)
from meith_plugins_files.scope import WorkspacePath, check_readable, check_writable

_READ_FLAGS: Final = os.O_RDONLY | os.O_NONBLOCK
#: Directories a write makes (`createDirs`) get this mode, less the umask (as `mkdir -p`).
NEW_DIR_MODE: Final = 0o777


@dataclass(frozen=True, slots=True)
class Parent:
    """The directory a write acts in, open, and the name in it."""

    dir_fd: int
    name: str
    #: The target's real path as opened: the parent's real path and the name.
    path: Path
    target: WorkspacePath

    @property
    def display(self) -> str:
        return self.target.display


def _changed(target: WorkspacePath, exc: PathEscapeError) -> ToolError:
    return ToolError(
        ErrorCode.VALIDATION_ERROR,
        f"{target.display}: a symbolic link is on the way (it changed after the path was "
        f"resolved, or names something outside the workspace); it is not followed ({exc})",
        {"reason": "symbolic link", "path": target.display},
    )


def _open_beneath(target: WorkspacePath, flags: int) -> int:
    """`target` opened beneath its root, no link followed; each failure a clear error."""
    with Beneath(target.root) as base:
        try:
            return base.open(target.relative, flags)
        except PathEscapeError as exc:
            raise _changed(target, exc) from None
        except FileNotFoundError:
            raise ToolError(
                ErrorCode.TOOL_FAILED,
                f"{target.display} does not exist",
                {"reason": "not found", "path": target.display},
            ) from None
        except OSError as exc:
            raise ToolError(
                ErrorCode.TOOL_FAILED, f"{target.display} cannot be opened: {exc.strerror}"
            ) from None


def open_for_read(ctx: ToolContext, target: WorkspacePath) -> tuple[int, os.stat_result]:
    """The regular file `target`, open, after checking the caller may read what was opened."""
    fd = _open_beneath(target, _READ_FLAGS)
    try:
        check_readable(ctx, Path(real_path(fd)))
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            what = (
                "a directory (use workspace_list_files)"
                if stat.S_ISDIR(st.st_mode)
                else "not a regular file"
            )
            raise ToolError(ErrorCode.TOOL_FAILED, f"{target.display} is {what}")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


@contextlib.contextmanager
def open_for_walk(ctx: ToolContext, target: WorkspacePath) -> Iterator[int]:
    """`target` opened (a directory, or whatever it is: the caller looks), checked as
    opened: what a listing or a search walks from."""
    fd = _open_beneath(target, os.O_RDONLY | os.O_NONBLOCK)
    try:
        check_readable(ctx, Path(real_path(fd)))
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def parent_for_write(
    ctx: ToolContext, target: WorkspacePath, *, create_dirs: bool = False
) -> Iterator[Parent]:
    """The directory `target` is written in, open (missing directories made with
    `create_dirs`), checked as opened: the grant's directory, the protected paths and, for
    every caller but the local user, the secret paths."""
    if target.relative == ".":
        raise ToolError(ErrorCode.VALIDATION_ERROR, "the workspace itself is not a file")
    with Beneath(target.root) as base:
        try:
            dir_fd, name = base.parent(target.relative)
        except FileNotFoundError:
            if not create_dirs:
                parent = os.path.relpath(target.path.parent, target.root)
                raise ToolError(
                    ErrorCode.TOOL_FAILED,
                    f"directory {parent} does not exist (pass createDirs: true to create it)",
                    {"reason": "no parent directory"},
                ) from None
            dir_fd, name = _made_parent(base, target)
        except PathEscapeError as exc:
            raise _changed(target, exc) from None
        except OSError as exc:
            raise ToolError(
                ErrorCode.TOOL_FAILED, f"cannot open {target.display}: {exc.strerror}"
            ) from None
    try:
        opened = WorkspacePath(target.root, Path(real_path(dir_fd), name))
        check_writable(ctx, opened)
        yield Parent(dir_fd, name, opened.path, target)
    finally:
        os.close(dir_fd)


def _made_parent(base: Beneath, target: WorkspacePath) -> tuple[int, str]:
    try:
        return base.parent(target.relative, create=True, mode=NEW_DIR_MODE)
    except PathEscapeError:
        raise
    except OSError as exc:
        parent = os.path.relpath(target.path.parent, target.root)
        raise ToolError(
            ErrorCode.TOOL_FAILED,
            f"cannot create directory {parent}: {exc.strerror or exc}",
        ) from None


__all__ = ["Parent", "open_for_read", "open_for_walk", "parent_for_write"]
