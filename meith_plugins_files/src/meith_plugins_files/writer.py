"""Reading a file whole and replacing it atomically, without following a link on the way."""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from meith_core import ErrorCode, PathEscapeError, ToolError, write_file_beneath
from meith_plugins_files.scope import WorkspacePath

#: A file larger than this is not edited (its undo copy and its diff would not be small).
MAX_EDIT_BYTES: Final = 4 * 1024 * 1024
#: Mode of a file meith creates, before the umask.
NEW_FILE_MODE: Final = 0o666


@dataclass(frozen=True, slots=True)
class Current:
    """A file's bytes and mode as found (`data` None: it does not exist)."""

    data: bytes | None
    mode: int | None


def read_current(target: WorkspacePath, *, limit: int = MAX_EDIT_BYTES) -> Current:
    """The file's content for an edit; a missing file is `Current(None, None)`."""
    try:
        fd = os.open(target.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return Current(None, None)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ToolError(
                ErrorCode.VALIDATION_ERROR, f"{target.display} is a symbolic link"
            ) from None
        raise ToolError(
            ErrorCode.TOOL_FAILED, f"cannot open {target.display}: {exc.strerror}"
        ) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(ErrorCode.TOOL_FAILED, f"{target.display} is not a regular file")
        if st.st_size > limit:
            raise ToolError(
                ErrorCode.TOOL_FAILED,
                f"{target.display} is {st.st_size} bytes; files over {limit} bytes are not edited",
                {"reason": "too large", "size": st.st_size, "limit": limit},
            )
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return Current(b"".join(chunks), stat.S_IMODE(st.st_mode))
    finally:
        os.close(fd)


def _umask() -> int:
    # Read, not set-and-restore: os.umask(0) would open a window in which another thread's
    # new files get mode 0666.
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return _IMPORT_UMASK


def _umask_at_import() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_IMPORT_UMASK: Final = _umask_at_import()


def replace_file(
    target: WorkspacePath, data: bytes, mode: int | None, *, create_dirs: bool
) -> None:
    """Write `data` to a temporary file beside the target and rename it over: readers see the
    old content or the new, never half. `mode` is kept (None: a new file, 0666 less umask).
    No symbolic link below the workspace root is followed (the core's `write_file_beneath`)."""
    parent = target.path.parent
    if not parent.is_dir():
        if not create_dirs:
            raise ToolError(
                ErrorCode.TOOL_FAILED,
                f"directory {os.path.relpath(parent, target.root)} does not exist "
                "(pass createDirs: true to create it)",
                {"reason": "no parent directory"},
            )
        try:
            os.makedirs(parent, exist_ok=True)
        except OSError as exc:
            raise ToolError(
                ErrorCode.TOOL_FAILED,
                f"cannot create directory {os.path.relpath(parent, target.root)}: "
                f"{exc.strerror or exc}",
            ) from None
    wanted = NEW_FILE_MODE & ~_umask() if mode is None else mode
    try:
        written = write_file_beneath(target.root, target.relative, data, mode=wanted)
    except PathEscapeError as exc:
        raise ToolError(ErrorCode.VALIDATION_ERROR, str(exc)) from None
    except OSError as exc:
        raise ToolError(
            ErrorCode.TOOL_FAILED, f"cannot write {target.display}: {exc.strerror or exc}"
        ) from None
    if mode is not None and _mode_of(written) != mode:
        # The umask took bits the file had: give them back, on the file just renamed there
        # (opened without following a link, so a swapped-in link is not chmod-ed through).
        # Looked at on the file (one lstat), not computed from the umask (a read of /proc).
        _restore_mode(Path(written), mode)


def _mode_of(path: Path) -> int | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None


def _restore_mode(path: Path, mode: int) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.fchmod(fd, mode)
    finally:
        os.close(fd)


def delete_file(target: WorkspacePath) -> None:
    """Remove a file meith created (undoing its creation); a link is removed, not followed."""
    try:
        os.unlink(target.path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise ToolError(
            ErrorCode.TOOL_FAILED, f"cannot remove {target.display}: {exc.strerror}"
        ) from None
