"""Reading a text file by lines: a window of it, its hash, and how many lines it has."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Final

from meith_core import ErrorCode, ToolError
from meith_plugins_files.models import MAX_READ_BYTES
from meith_plugins_files.scope import WorkspacePath
from meith_plugins_files.textio import (
    SNIFF_BYTES,
    BinaryFile,
    Encoding,
    LineEnding,
    bom_encoding,
    decode,
    line_ending,
    looks_binary,
)

#: Files up to this size are read whole; larger ones are streamed a line at a time.
_WHOLE_FILE_BYTES: Final = 8 * 1024 * 1024
_CHUNK: Final = 1 << 20


@dataclass(frozen=True, slots=True)
class Window:
    content: str
    line_count: int
    total_lines: int
    truncated: bool
    sha256: str
    size: int
    encoding: Encoding
    line_ending: LineEnding


def _binary(target: WorkspacePath, why: str) -> ToolError:
    return ToolError(
        ErrorCode.TOOL_FAILED,
        f"{target.display} is a binary file ({why}); it is not read as text",
        {"reason": "binary", "path": target.display},
    )


def read_window(
    target: WorkspacePath, fd: int, st: os.stat_result, offset: int, limit: int
) -> Window:
    """A window of the text file open at `fd` (its `st`; `target` names it in messages): the
    tools open it through the workspace's descriptor first (`opened.open_for_read`)."""
    if st.st_size <= _WHOLE_FILE_BYTES:
        return _whole(target, fd, offset, limit)
    return _streamed(target, fd, st.st_size, offset, limit)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, _CHUNK):
        chunks.append(chunk)
    return b"".join(chunks)


def _whole(target: WorkspacePath, fd: int, offset: int, limit: int) -> Window:
    data = _read_all(fd)
    try:
        decoded = decode(data)
    except BinaryFile as exc:
        raise _binary(target, str(exc)) from None
    text = decoded.text
    ending = line_ending(text)
    if offset == 1 and len(data) <= MAX_READ_BYTES:
        # The whole file fits in one read (the common case): counted, not split and joined.
        total = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if limit >= total:
            return Window(
                content=text,
                line_count=total,
                total_lines=total,
                truncated=False,
                sha256=hashlib.sha256(data).hexdigest(),
                size=len(data),
                encoding=decoded.encoding,
                line_ending=ending,
            )
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
        total = len(lines)
        ends_with_newline = True
    else:
        total = len(lines)
        ends_with_newline = False
    start = offset - 1
    chosen = lines[start : start + limit]
    truncated = start + len(chosen) < total
    if len(data) > MAX_READ_BYTES:
        chosen, cut = _cap(chosen)
        truncated = truncated or cut
    content = "\n".join(chosen)
    if chosen and (start + len(chosen) < total or ends_with_newline):
        content += "\n"
    return Window(
        content=content,
        line_count=len(chosen),
        total_lines=total,
        truncated=truncated,
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        encoding=decoded.encoding,
        line_ending=ending,
    )


def _cap(lines: list[str]) -> tuple[list[str], bool]:
    size = 0
    for i, line in enumerate(lines):
        size += len(line.encode("utf-8")) + 1
        if size > MAX_READ_BYTES:
            return lines[:i], True
    return lines, False


def _streamed(target: WorkspacePath, fd: int, size: int, offset: int, limit: int) -> Window:
    """A large file: hashed and counted whole, only the window decoded and kept."""
    head = os.pread(fd, SNIFF_BYTES, 0)
    if looks_binary(head):
        raise _binary(target, "NUL bytes in its first 8 KiB")
    encoding: Encoding = bom_encoding(head) or "utf-8"
    if encoding.startswith("utf-16"):
        raise ToolError(
            ErrorCode.TOOL_FAILED, f"{target.display} is a UTF-16 file over 8 MiB; not read"
        )
    digest = hashlib.sha256()
    kept: list[bytes] = []
    kept_bytes = 0
    crlf = lf = total = 0
    truncated = False
    with os.fdopen(os.dup(fd), "rb", buffering=_CHUNK) as fh:
        for total, line in enumerate(fh, 1):
            digest.update(line)
            if line.endswith(b"\n"):
                lf += 1
                crlf += line.endswith(b"\r\n")
            if offset <= total < offset + limit and not truncated:
                if kept_bytes + len(line) > MAX_READ_BYTES:
                    truncated = True
                else:
                    kept.append(line)
                    kept_bytes += len(line)
    truncated = truncated or offset - 1 + len(kept) < total
    text = b"".join(kept).decode("utf-8", "replace")
    if encoding == "utf-8-sig" and offset == 1:
        text = text.removeprefix("\ufeff")
    ending: LineEnding = (
        "none" if lf == 0 else "crlf" if crlf == lf else "lf" if crlf == 0 else "mixed"
    )
    return Window(
        content=text,
        line_count=len(kept),
        total_lines=total,
        truncated=truncated,
        sha256=digest.hexdigest(),
        size=size,
        encoding=encoding,
        line_ending=ending,
    )
