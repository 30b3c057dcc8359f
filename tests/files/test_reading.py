"""workspace_read_file on real files: windows of lines, hashes, encodings, the 2 MiB cap and
files that are not text."""

from __future__ import annotations

import codecs
import hashlib
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meith_core import ErrorCode
from meith_core.testing import MeithHarness
from tests.files.conftest import fails, ok

pytestmark = pytest.mark.meith_plugin("files")


def read(meith: MeithHarness, ws: Path, path: str, **args: object) -> dict:
    return ok(meith, "workspace_read_file", {"cwd": str(ws), "path": path, **args})


def test_a_window_of_lines_with_total_truncated_and_sha256(files: MeithHarness, ws: Path) -> None:
    data = "".join(f"line {i}\n" for i in range(1, 11))
    (ws / "ten.txt").write_text(data)
    got = read(files, ws, "ten.txt", offset=3, limit=4)
    assert got["content"] == "line 3\nline 4\nline 5\nline 6\n"
    assert (got["offset"], got["lineCount"], got["totalLines"]) == (3, 4, 10)
    assert got["truncated"] is True
    assert got["sha256"] == hashlib.sha256(data.encode()).hexdigest()
    tail = read(files, ws, "ten.txt", offset=9)
    assert tail["content"] == "line 9\nline 10\n"
    assert tail["truncated"] is False


def test_a_last_line_without_newline_is_returned_without_one(files: MeithHarness, ws: Path) -> None:
    (ws / "a.txt").write_text("a\nb")
    got = read(files, ws, "a.txt")
    assert got["content"] == "a\nb"
    assert got["totalLines"] == 2
    assert got["lineEnding"] == "lf"


@pytest.mark.parametrize(
    ("raw", "encoding", "text"),
    [
        ("héllo\n".encode(), "utf-8", "héllo\n"),
        (codecs.BOM_UTF8 + "héllo\n".encode(), "utf-8-sig", "héllo\n"),
        (codecs.BOM_UTF16_LE + "héllo\n".encode("utf-16-le"), "utf-16-le", "héllo\n"),
        ("héllo\n".encode("latin-1"), "latin-1", "héllo\n"),
    ],
)
def test_the_encoding_is_detected_and_reported(
    files: MeithHarness, ws: Path, raw: bytes, encoding: str, text: str
) -> None:
    (ws / "e.txt").write_bytes(raw)
    got = read(files, ws, "e.txt")
    assert got["encoding"] == encoding
    assert got["content"] == text


def test_crlf_line_endings_are_reported(files: MeithHarness, ws: Path) -> None:
    (ws / "w.txt").write_bytes(b"a\r\nb\r\n")
    got = read(files, ws, "w.txt")
    assert got["lineEnding"] == "crlf"
    assert got["totalLines"] == 2


def test_a_binary_file_is_refused_with_a_clear_error(files: MeithHarness, ws: Path) -> None:
    (ws / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + os.urandom(64))
    err = fails(files, "workspace_read_file", {"cwd": str(ws), "path": "img.png"})
    assert err.code == ErrorCode.TOOL_FAILED
    assert "binary file" in err.message
    assert err.details["reason"] == "binary"


@pytest.mark.slow
def test_a_2_gib_sparse_file_is_refused_without_reading_it_whole(
    files: MeithHarness, ws: Path
) -> None:
    big = ws / "sparse.bin"
    with open(big, "wb") as fh:
        fh.truncate(2 * 1024**3)
    err = fails(files, "workspace_read_file", {"cwd": str(ws), "path": "sparse.bin"})
    assert "binary file" in err.message
    listed = ok(files, "workspace_list_files", {"cwd": str(ws)})
    assert listed["files"] == ["sparse.bin"]
    found = ok(files, "workspace_search", {"cwd": str(ws), "query": "x"})
    assert found["matches"] == []  # over 1 MiB: skipped


def test_a_read_stops_at_the_2_mib_cap_and_says_so(files: MeithHarness, ws: Path) -> None:
    line = "x" * 1023 + "\n"
    (ws / "big.txt").write_text(line * 3072)  # 3 MiB
    got = read(files, ws, "big.txt", limit=1_000_000)
    assert got["truncated"] is True
    assert got["totalLines"] == 3072
    assert len(got["content"].encode()) <= 2 * 1024 * 1024
    assert got["lineCount"] == 2048  # exactly 2 MiB
    rest = read(files, ws, "big.txt", offset=got["lineCount"] + 1, limit=1_000_000)
    assert rest["lineCount"] == 3072 - 2048
    assert rest["truncated"] is False


def test_a_text_file_over_8_mib_is_streamed_by_lines(files: MeithHarness, ws: Path) -> None:
    line = "y" * 99 + "\n"
    data = line * 100_000  # 10 MB
    (ws / "huge.txt").write_text(data)
    got = read(files, ws, "huge.txt", offset=99_999, limit=10)
    assert got["content"] == line * 2
    assert got["totalLines"] == 100_000
    assert got["sha256"] == hashlib.sha256(data.encode()).hexdigest()
    assert got["truncated"] is False


def test_a_directory_or_a_missing_file_is_an_error(files: MeithHarness, ws: Path) -> None:
    (ws / "d").mkdir()
    assert "directory" in fails(files, "workspace_read_file", {"cwd": str(ws), "path": "d"}).message
    missing = fails(files, "workspace_read_file", {"cwd": str(ws), "path": "nope.txt"})
    assert missing.message == "nope.txt does not exist"


def test_a_fifo_is_not_read(files: MeithHarness, ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    err = fails(files, "workspace_read_file", {"cwd": str(ws), "path": "pipe"})
    assert "not a regular file" in err.message


@pytest.mark.slow
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(alphabet="ab\n\r\t é", max_size=60))
def test_windows_of_one_line_put_together_are_the_whole_read(tmp_path: Path, text: str) -> None:
    from meith_plugins_files.reading import read_window
    from meith_plugins_files.scope import WorkspacePath

    path = tmp_path / "t.txt"
    path.write_bytes(text.encode())

    def read_window_of(offset: int, limit: int) -> Any:
        fd = os.open(path, os.O_RDONLY)
        try:
            return read_window(WorkspacePath(tmp_path, path), fd, os.fstat(fd), offset, limit)
        finally:
            os.close(fd)

    whole = read_window_of(1, 1_000_000)
    assert whole.content == text
    assert whole.total_lines == len(text.split("\n")) - (
        1 if text.endswith("\n") or not text else 0
    )
    pieces = [read_window_of(n, 1) for n in range(1, whole.total_lines + 1)]
    assert "".join(w.content for w in pieces) == text
    assert all(w.line_count == 1 for w in pieces)
