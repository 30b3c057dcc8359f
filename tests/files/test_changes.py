"""workspace_write_file: atomic replacement, kept modes and encodings, expectedSha256
conflicts (also between concurrent writers) and the undo step each change leaves."""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from pathlib import Path

import pytest

from meith_core import ErrorCode
from meith_core.testing import MeithHarness
from tests.files.conftest import fails, ok

pytestmark = pytest.mark.meith_plugin("files")


def write(meith: MeithHarness, ws: Path, path: str, content: str, **args: object) -> dict:
    return ok(
        meith, "workspace_write_file", {"cwd": str(ws), "path": path, "content": content, **args}
    )


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_new_file_is_created_with_a_diff_from_dev_null(files: MeithHarness, ws: Path) -> None:
    got = write(files, ws, "new.txt", "hello\n")
    assert (ws / "new.txt").read_text() == "hello\n"
    assert got["created"] is True
    assert got["sha256"] == sha(b"hello\n")
    assert got["diff"] == "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hello\n"
    assert got["undoSteps"] == 1


def test_a_replacement_is_atomic_a_new_inode_renamed_over(files: MeithHarness, ws: Path) -> None:
    target = ws / "a.txt"
    target.write_text("old\n")
    before = os.stat(target).st_ino
    got = write(files, ws, "a.txt", "new\n")
    assert target.read_text() == "new\n"
    assert os.stat(target).st_ino != before  # renamed over, never rewritten in place
    assert got["diff"].endswith("-old\n+new\n")
    assert [p.name for p in ws.iterdir()] == ["a.txt"]  # no temporary file left behind


@pytest.mark.parametrize("mode", [0o755, 0o600, 0o666])
def test_the_file_mode_is_kept(files: MeithHarness, ws: Path, mode: int) -> None:
    target = ws / "run.sh"
    target.write_text("#!/bin/sh\n")
    os.chmod(target, mode)
    write(files, ws, "run.sh", "#!/bin/sh\necho hi\n")
    assert stat.S_IMODE(os.stat(target).st_mode) == mode


def test_a_stale_expected_sha256_is_a_conflict_and_changes_nothing(
    files: MeithHarness, ws: Path
) -> None:
    target = ws / "a.txt"
    target.write_text("v1\n")
    stale = sha(b"v1\n")
    target.write_text("v2 by someone else\n")
    err = fails(
        files,
        "workspace_write_file",
        {"cwd": str(ws), "path": "a.txt", "content": "mine\n", "expectedSha256": stale},
    )
    assert err.code == ErrorCode.TOOL_FAILED
    assert err.details == {
        "reason": "conflict",
        "expectedSha256": stale,
        "actualSha256": sha(b"v2 by someone else\n"),
    }
    assert target.read_text() == "v2 by someone else\n"
    write(files, ws, "a.txt", "mine\n", expectedSha256=sha(b"v2 by someone else\n"))
    assert target.read_text() == "mine\n"


def test_expected_sha256_of_a_file_that_does_not_exist_is_a_conflict(
    files: MeithHarness, ws: Path
) -> None:
    err = fails(
        files,
        "workspace_write_file",
        {"cwd": str(ws), "path": "gone.txt", "content": "x", "expectedSha256": "0" * 64},
    )
    assert err.details["actualSha256"] is None
    assert not (ws / "gone.txt").exists()


@pytest.mark.slow  # about 0.5-1 s alone: over the guard's limit on a loaded CI machine
def test_concurrent_writers_with_the_same_expected_sha256_exactly_one_wins(
    files: MeithHarness, ws: Path
) -> None:
    target = ws / "shared.txt"
    target.write_text("base\n")
    base = sha(b"base\n")
    results: list = [None] * 8
    start = threading.Barrier(8)

    def writer(i: int) -> None:
        start.wait()
        results[i] = files.call(
            "workspace_write_file",
            {
                "cwd": str(ws),
                "path": "shared.txt",
                "content": f"writer {i}\n",
                "expectedSha256": base,
            },
            caller="internal",
        )

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, r in enumerate(results) if r.ok]
    assert len(winners) == 1
    assert target.read_text() == f"writer {winners[0]}\n"
    losers = [r for r in results if not r.ok]
    assert all(r.error.details["reason"] == "conflict" for r in losers)


def test_an_existing_files_encoding_is_kept(files: MeithHarness, ws: Path) -> None:
    target = ws / "legacy.txt"
    target.write_bytes("café\n".encode("latin-1"))
    write(files, ws, "legacy.txt", "crème\n")
    assert target.read_bytes() == "crème\n".encode("latin-1")
    err = fails(
        files, "workspace_write_file", {"cwd": str(ws), "path": "legacy.txt", "content": "€\n"}
    )
    assert err.code == ErrorCode.VALIDATION_ERROR
    assert "latin-1" in err.message


def test_missing_directories_need_create_dirs(files: MeithHarness, ws: Path) -> None:
    args = {"cwd": str(ws), "path": "a/b/c.txt", "content": "x\n"}
    err = fails(files, "workspace_write_file", args)
    assert "createDirs" in err.message
    assert not (ws / "a").exists()
    write(files, ws, "a/b/c.txt", "x\n", createDirs=True)
    assert (ws / "a/b/c.txt").read_text() == "x\n"


def test_writing_the_same_content_again_changes_nothing_and_keeps_no_step(
    files: MeithHarness, ws: Path
) -> None:
    write(files, ws, "a.txt", "same\n")
    again = write(files, ws, "a.txt", "same\n")
    assert again["changed"] is False
    assert again["diff"] == ""
    assert again["undoSteps"] == 1


def test_a_binary_file_is_not_overwritten_as_text(files: MeithHarness, ws: Path) -> None:
    (ws / "b.bin").write_bytes(b"\0\1\2")
    err = fails(files, "workspace_write_file", {"cwd": str(ws), "path": "b.bin", "content": "x"})
    assert "binary" in err.message
    assert (ws / "b.bin").read_bytes() == b"\0\1\2"


def test_a_path_through_a_file_says_why_it_cannot_be_written(files: MeithHarness, ws: Path) -> None:
    (ws / "a").write_text("a file\n")
    err = fails(
        files,
        "workspace_write_file",
        {"cwd": str(ws), "path": "a/b/c.txt", "content": "x", "createDirs": True},
    )
    assert err.message == "cannot open a/b/c.txt: Not a directory"
    assert (ws / "a").read_text() == "a file\n"
