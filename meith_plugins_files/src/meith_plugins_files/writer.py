"""Reading a file whole and replacing it atomically, in the directory a write opened
(`opened.parent_for_write`): through its descriptor, never following a link."""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from typing import Final

from meith_core import ErrorCode, ToolError, replace_in, set_mode_in
from meith_plugins_files.opened import Parent

#: A file larger than this is not edited (its undo copy and its diff would not be small).
MAX_EDIT_BYTES: Final = 4 * 1024 * 1024
#: Mode of a file meith creates, before the umask.
NEW_FILE_MODE: Final = 0o666


@dataclass(frozen=True, slots=True)
class Current:
    """A file's bytes and mode as found (`data` None: it does not exist)."""

    data: bytes | None
    mode: int | None


def read_current(parent: Parent, *, limit: int = MAX_EDIT_BYTES) -> Current:
    """The file's content for an edit; a missing file is `Current(None, None)`."""
    try:
        fd = os.open(
            parent.name,
            os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
            dir_fd=parent.dir_fd,
        )
    except FileNotFoundError:
        return Current(None, None)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ToolError(
                ErrorCode.VALIDATION_ERROR,
                f"{parent.display} is a symbolic link; it is not followed",
                {"reason": "symbolic link", "path": parent.display},
            ) from None
        raise ToolError(
            ErrorCode.TOOL_FAILED, f"cannot open {parent.display}: {exc.strerror}"
        ) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(ErrorCode.TOOL_FAILED, f"{parent.display} is not a regular file")
        if st.st_size > limit:
            raise ToolError(
                ErrorCode.TOOL_FAILED,
                f"{parent.display} is {st.st_size} bytes; files over {limit} bytes are not edited",
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


def replace_file(parent: Parent, data: bytes, mode: int | None) -> None:
    """Write `data` to a temporary file beside the target and rename it over, both in the
    opened directory: readers see the old content or the new, never half; a link at the name
    is replaced, never written through. `mode` is kept (None: a new file, 0666 less umask)."""
    wanted = NEW_FILE_MODE & ~_umask() if mode is None else mode
    try:
        replace_in(parent.dir_fd, parent.name, data, mode=wanted)
    except OSError as exc:
        raise ToolError(
            ErrorCode.TOOL_FAILED, f"cannot write {parent.display}: {exc.strerror or exc}"
        ) from None
    if mode is not None and _mode_of(parent) != mode:
        # The umask took bits the file had: give them back, on the file just renamed there
        # (opened without following a link, so a swapped-in link is not chmod-ed through).
        # Looked at on the file (one lstat), not computed from the umask (a read of /proc).
        set_mode_in(parent.dir_fd, parent.name, mode)


def _mode_of(parent: Parent) -> int | None:
    try:
        st = os.lstat(parent.name, dir_fd=parent.dir_fd)
    except OSError:
        return None
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None


def delete_file(parent: Parent) -> None:
    """Remove a file meith created (undoing its creation), in the opened directory: a link
    is removed, not followed."""
    try:
        os.unlink(parent.name, dir_fd=parent.dir_fd)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise ToolError(
            ErrorCode.TOOL_FAILED, f"cannot remove {parent.display}: {exc.strerror}"
        ) from None
