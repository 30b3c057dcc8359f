"""Screenshot files: always under `$MEITH_HOME/artifacts/`, named by the host, never by a caller."""

from __future__ import annotations

import os
import struct
from pathlib import Path

from meith_core import PRIVATE_FILE_MODE as FILE_MODE
from meith_core import ensure_private_dir

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    if len(data) < 24 or not data.startswith(_PNG_SIGNATURE) or data[12:16] != b"IHDR":
        raise ValueError("not a PNG image")
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def write_artifact(artifacts_dir: Path, stem: str, suffix: str, data: bytes) -> Path:
    """Write `data` to a new file `<stem><suffix>` (or `<stem>-N<suffix>`) in the directory.

    The stem is built by the caller from ids it generated; it must be a plain file name.
    """
    if os.sep in stem or (os.altsep and os.altsep in stem) or stem.startswith("."):
        raise ValueError(f"artifact name {stem!r} is not a plain file name")
    ensure_private_dir(artifacts_dir)
    for n in range(1000):
        path = artifacts_dir / (f"{stem}{suffix}" if n == 0 else f"{stem}-{n}{suffix}")
        try:
            fd = os.open(
                path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), FILE_MODE
            )
        except FileExistsError:
            continue
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        return path
    raise FileExistsError(f"could not find a free artifact name for {stem}{suffix}")
