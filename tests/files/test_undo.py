"""workspace_undo: steps back through meith's changes, refusal when the file changed since,
50 steps a file, and steps that survive a runtime restart (kept under MEITH_HOME)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from meith_core.testing import MeithHarness
from tests.files.conftest import fails, ok

pytestmark = pytest.mark.meith_plugin("files")


def write(meith: MeithHarness, ws: Path, content: str, path: str = "a.txt") -> dict:
    return ok(meith, "workspace_write_file", {"cwd": str(ws), "path": path, "content": content})


def undo(meith: MeithHarness, ws: Path, path: str = "a.txt", **args: object) -> dict:
    return ok(meith, "workspace_undo", {"cwd": str(ws), "path": path, **args})


@pytest.mark.slow  # about 0.5-1 s alone: over the guard's limit on a loaded CI machine
def test_undo_steps_back_through_each_change_then_removes_a_created_file(
    files: MeithHarness, ws: Path
) -> None:
    write(files, ws, "v1\n")
    write(files, ws, "v2\n")
    ok(
        files,
        "workspace_apply_patch",
        {"cwd": str(ws), "path": "a.txt", "edits": [{"oldText": "v2", "newText": "v3"}]},
    )
    assert undo(files, ws)["undoSteps"] == 2
    assert (ws / "a.txt").read_text() == "v2\n"
    got = undo(files, ws)
    assert got["diff"].endswith("-v2\n+v1\n")
    assert (ws / "a.txt").read_text() == "v1\n"
    gone = undo(files, ws)
    assert gone["restored"] == "deleted"
    assert not (ws / "a.txt").exists()
    done = fails(files, "workspace_undo", {"cwd": str(ws), "path": "a.txt"})
    assert done.details == {"reason": "nothing to undo"}
    # It did change the file: the message says what is true, not that it never did.
    assert "meith has not changed it" not in done.message
    assert "every undo step kept for it has been used" in done.message
    (ws / "b.txt").write_text("by hand\n")
    never = fails(files, "workspace_undo", {"cwd": str(ws), "path": "b.txt"})
    assert "nothing to undo for b.txt: meith has not changed it" in never.message


def test_undo_refuses_when_the_file_changed_since_unless_forced(
    files: MeithHarness, ws: Path
) -> None:
    (ws / "a.txt").write_text("original\n")
    write(files, ws, "meith\n")
    (ws / "a.txt").write_text("edited by hand\n")
    err = fails(files, "workspace_undo", {"cwd": str(ws), "path": "a.txt"})
    assert err.details["reason"] == "changed since"
    assert "force: true" in err.message
    assert (ws / "a.txt").read_text() == "edited by hand\n"
    undo(files, ws, force=True)
    assert (ws / "a.txt").read_text() == "original\n"


def test_undo_restores_the_mode_too(files: MeithHarness, ws: Path) -> None:
    target = ws / "run.sh"
    target.write_text("a\n")
    os.chmod(target, 0o750)
    write(files, ws, "b\n", "run.sh")
    undo(files, ws, "run.sh")
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o750
    assert target.read_text() == "a\n"


@pytest.mark.slow
def test_at_most_50_steps_are_kept_per_file(files: MeithHarness, ws: Path) -> None:
    for i in range(55):
        last = write(files, ws, f"v{i}\n")
    assert last["undoSteps"] == 50
    for _ in range(50):
        undo(files, ws)
    assert (ws / "a.txt").read_text() == "v4\n"  # the oldest 5 steps were dropped
    assert fails(files, "workspace_undo", {"cwd": str(ws), "path": "a.txt"}).details["reason"] == (
        "nothing to undo"
    )


def test_undo_steps_survive_a_runtime_restart(tmp_path: Path, ws: Path) -> None:
    home = tmp_path / "home"
    (ws / "a.txt").write_text("before restart\n")
    with MeithHarness(home, "files", cwd=ws) as first:
        first.approve()
        write(first, ws, "changed\n")
    with MeithHarness(home, "files", cwd=ws) as second:
        got = undo(second, ws)
    assert got["restored"] == "previous"
    assert (ws / "a.txt").read_text() == "before restart\n"


def test_the_undo_store_is_private_under_meith_home(files: MeithHarness, ws: Path) -> None:
    (ws / "a.txt").write_text("secret-ish\n")
    write(files, ws, "x\n")
    store = files.home.root / "state" / "files" / "undo"
    assert stat.S_IMODE(os.stat(store).st_mode) == 0o700
    kept = [p for p in store.rglob("*") if p.is_file()]
    assert [p.suffix for p in kept] == [".step"]
    assert all(stat.S_IMODE(os.stat(p).st_mode) == 0o600 for p in kept)
    assert kept[0].read_bytes().endswith(b"}\nsecret-ish\n")  # a header line, then the content


def test_a_removed_undo_store_is_made_again(files: MeithHarness, ws: Path) -> None:
    import shutil

    write(files, ws, "v1\n")
    shutil.rmtree(files.home.root / "state" / "files")
    assert write(files, ws, "v2\n")["undoSteps"] == 1
    undo(files, ws)
    assert (ws / "a.txt").read_text() == "v1\n"


def test_a_corrupt_step_is_refused_rather_than_restored(files: MeithHarness, ws: Path) -> None:
    (ws / "a.txt").write_text("original\n")
    write(files, ws, "changed\n")
    (step,) = (files.home.root / "state" / "files" / "undo").rglob("*.step")
    step.write_bytes(step.read_bytes().replace(b"original", b"tampered"))
    err = fails(files, "workspace_undo", {"cwd": str(ws), "path": "a.txt"})
    assert "does not match its hash" in err.message
    assert (ws / "a.txt").read_text() == "changed\n"


def test_the_text_counts_undo_steps_in_words_that_agree(files: MeithHarness, ws: Path) -> None:
    args = {"cwd": str(ws), "path": "a.txt"}

    def text(tool: str, more: dict[str, str] | None = None) -> str:
        return files.call(tool, {**args, **(more or {})}, caller="internal").text or ""

    first = text("workspace_write_file", {"content": "v1\n"})
    assert first.startswith("created a.txt (sha256 ")
    assert "; 1 undo step)" in first
    second = text("workspace_write_file", {"content": "v2\n"})
    assert "; 2 undo steps)" in second
    back = text("workspace_undo")
    assert back.startswith("restored a.txt (sha256 ")
    assert "; 1 undo step left)" in back
    gone = text("workspace_undo")
    assert gone == "removed a.txt (meith had created it); 0 undo steps left"
