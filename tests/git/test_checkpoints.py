"""Checkpoints: create, list, compare, restore."""

from __future__ import annotations

import json
import re

import pytest

from tests.git.support import call_err, call_ok

pytestmark = pytest.mark.anyio


def snapshot(repo, sh):
    """Everything a checkpoint must not touch."""
    return {
        "head": sh(repo, "rev-parse", "HEAD", check=False).strip(),
        "branch": sh(repo, "symbolic-ref", "HEAD").strip(),
        "index": (repo / ".git" / "index").read_bytes()
        if (repo / ".git" / "index").exists()
        else None,
        "files": {
            p.relative_to(repo).as_posix(): p.read_bytes()
            for p in sorted(repo.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(repo).parts
        },
    }


@pytest.fixture
def busy_repo(make_repo, sh):
    repo = make_repo(files={"tracked.txt": "v1\n", "staged.txt": "s1\n", "gone.txt": "g\n"})
    (repo / ".gitignore").write_text("*.log\n")
    sh(repo, "add", ".gitignore")
    sh(repo, "commit", "-q", "-m", "ignore logs")
    (repo / "staged.txt").write_text("s2 staged\n")
    sh(repo, "add", "staged.txt")
    (repo / "staged.txt").write_text("s3 staged then edited\n")
    (repo / "tracked.txt").write_text("v2 unstaged\n")
    (repo / "gone.txt").unlink()
    (repo / "new.txt").write_text("untracked\n")
    (repo / "debug.log").write_text("ignored\n")
    return repo


async def test_create_touches_neither_index_nor_files_nor_head(git_rt, busy_repo, sh):
    before = snapshot(busy_repo, sh)
    meta = await call_ok(
        git_rt,
        "git_checkpoint_create",
        {
            "cwd": str(busy_repo),
            "label": "before agent",
            "source": "agent",
            "sessionId": "s1",
            "toolCallId": "t1",
        },
    )
    assert snapshot(busy_repo, sh) == before
    assert re.fullmatch(r"[0-9a-z]+-[0-9a-z]{8}", meta["id"])
    assert meta["ref"] == f"refs/meith/checkpoints/{meta['id']}"
    assert meta["root"] == str(busy_repo)
    assert meta["baseHead"] == before["head"]
    assert meta["label"] == "before agent"
    assert meta["source"] == "agent"
    assert meta["sessionId"] == "s1"
    assert meta["toolCallId"] == "t1"
    assert isinstance(meta["createdAt"], int)
    # The worktree tree has the untracked file and not the ignored one; the index tree has
    # the staged version.
    tree = sh(busy_repo, "ls-tree", "-r", "--name-only", meta["worktreeTree"]).split()
    assert sorted(tree) == [".gitignore", "new.txt", "staged.txt", "tracked.txt"]
    assert sh(busy_repo, "show", f"{meta['indexTree']}:staged.txt") == "s2 staged\n"
    assert sh(busy_repo, "show", f"{meta['worktreeTree']}:staged.txt") == "s3 staged then edited\n"
    stored = json.loads((busy_repo / ".git" / "meith" / "checkpoints.json").read_text())
    assert stored[0]["id"] == meta["id"]
    assert not list((busy_repo / ".git" / "meith").glob("tmp-*"))


async def test_restore_brings_back_files_and_staged_state_without_moving_head(
    git_rt, busy_repo, sh
):
    before = snapshot(busy_repo, sh)
    status_before = await call_ok(git_rt, "git_status", {"cwd": str(busy_repo)})
    meta = await call_ok(git_rt, "git_checkpoint_create", {"cwd": str(busy_repo)})
    # Wreck the work tree and the index.
    (busy_repo / "tracked.txt").write_text("v3 wrecked\n")
    (busy_repo / "new.txt").unlink()
    (busy_repo / "gone.txt").write_text("back from the dead\n")
    (busy_repo / "later.txt").write_text("created after the checkpoint\n")
    sh(busy_repo, "add", "-A")
    result = await call_ok(
        git_rt, "git_checkpoint_restore", {"cwd": str(busy_repo), "id": meta["id"], "confirm": True}
    )
    assert result["checkpoint"]["id"] == meta["id"]
    after = snapshot(busy_repo, sh)
    assert after["head"] == before["head"]
    assert after["branch"] == before["branch"]
    assert after["files"] == before["files"]  # includes the ignored debug.log, kept
    assert result["status"]["files"] == status_before["files"]


async def test_restore_refuses_when_head_moved_unless_forced(git_rt, busy_repo, sh):
    meta = await call_ok(git_rt, "git_checkpoint_create", {"cwd": str(busy_repo)})
    sh(busy_repo, "commit", "-q", "-m", "moved on")
    moved = sh(busy_repo, "rev-parse", "HEAD").strip()
    code, message = await call_err(
        git_rt, "git_checkpoint_restore", {"cwd": str(busy_repo), "id": meta["id"], "confirm": True}
    )
    assert code == "TOOL_FAILED"
    assert "HEAD has moved" in message
    assert "force" in message
    await call_ok(
        git_rt,
        "git_checkpoint_restore",
        {"cwd": str(busy_repo), "id": meta["id"], "confirm": True, "force": True},
    )
    assert sh(busy_repo, "rev-parse", "HEAD").strip() == moved
    assert (busy_repo / "tracked.txt").read_text() == "v2 unstaged\n"


async def test_restore_of_an_unknown_id_and_without_confirm(git_rt, make_repo):
    repo = make_repo()
    code, message = await call_err(
        git_rt, "git_checkpoint_restore", {"cwd": str(repo), "id": "abc-12345678", "confirm": True}
    )
    assert (code, message) == ("TOOL_FAILED", "Unknown checkpoint: abc-12345678")
    code, _ = await call_err(
        git_rt, "git_checkpoint_restore", {"cwd": str(repo), "id": "abc-12345678"}
    )
    assert code == "VALIDATION_ERROR"
    code, _ = await call_err(
        git_rt, "git_checkpoint_restore", {"cwd": str(repo), "id": "--help", "confirm": True}
    )
    assert code == "VALIDATION_ERROR"


async def test_list_is_newest_first_and_drops_entries_whose_ref_is_gone(git_rt, make_repo, sh):
    repo = make_repo()
    first = await call_ok(git_rt, "git_checkpoint_create", {"cwd": str(repo), "label": "one"})
    second = await call_ok(git_rt, "git_checkpoint_create", {"cwd": str(repo), "label": "two"})
    listed = await call_ok(git_rt, "git_checkpoint_list", {"cwd": str(repo)})
    assert [c["id"] for c in listed] == [second["id"], first["id"]]
    sh(repo, "update-ref", "-d", first["ref"])
    listed = await call_ok(git_rt, "git_checkpoint_list", {"cwd": str(repo)})
    assert [c["id"] for c in listed] == [second["id"]]


async def test_list_of_a_corrupt_metadata_file_is_empty(git_rt, make_repo):
    repo = make_repo()
    (repo / ".git" / "meith").mkdir()
    (repo / ".git" / "meith" / "checkpoints.json").write_text("{not json")
    assert await call_ok(git_rt, "git_checkpoint_list", {"cwd": str(repo)}) == []


async def test_checkpoints_work_before_the_first_commit(git_rt, make_repo):
    repo = make_repo(files={"a.txt": "a\n"}, commit=False)
    meta = await call_ok(git_rt, "git_checkpoint_create", {"cwd": str(repo)})
    assert meta["baseHead"] is None
    (repo / "a.txt").write_text("changed\n")
    await call_ok(
        git_rt, "git_checkpoint_restore", {"cwd": str(repo), "id": meta["id"], "confirm": True}
    )
    assert (repo / "a.txt").read_text() == "a\n"


async def test_compare_a_checkpoint_with_head_and_with_another(git_rt, make_repo):
    repo = make_repo(files={"a.txt": "1\n"})
    (repo / "a.txt").write_text("1\n2\n")
    (repo / "img.bin").write_bytes(b"\0\1\2")
    first = await call_ok(git_rt, "git_checkpoint_create", {"cwd": str(repo)})
    result = await call_ok(
        git_rt,
        "git_checkpoint_compare",
        {"cwd": str(repo), "left": first["id"], "includePatch": True},
    )
    assert result["left"] == first["ref"]
    assert result["right"] == "HEAD"
    files = {f["path"]: f for f in result["files"]}
    assert files["a.txt"] == {"path": "a.txt", "additions": 0, "deletions": 1, "binary": False}
    assert files["img.bin"]["binary"] is True
    assert "a.txt" in result["stat"]
    assert "-2" in result["patch"]
    (repo / "a.txt").write_text("1\n2\n3\n")
    second = await call_ok(git_rt, "git_checkpoint_create", {"cwd": str(repo)})
    result = await call_ok(
        git_rt,
        "git_checkpoint_compare",
        {"cwd": str(repo), "left": first["id"], "right": second["id"]},
    )
    assert result["files"] == [{"path": "a.txt", "additions": 1, "deletions": 0, "binary": False}]
    assert result["patch"] == ""


async def test_compare_rejects_unknown_and_option_like_refs(git_rt, make_repo):
    repo = make_repo()
    code, message = await call_err(
        git_rt, "git_checkpoint_compare", {"cwd": str(repo), "left": "nope-00000000"}
    )
    assert code == "TOOL_FAILED"
    assert "nope-00000000" in message
    code, _ = await call_err(
        git_rt, "git_checkpoint_compare", {"cwd": str(repo), "left": "--output=x"}
    )
    assert code == "VALIDATION_ERROR"


async def test_metadata_entries_that_name_another_ref_are_ignored(git_rt, make_repo, sh):
    repo = make_repo()
    meta = await call_ok(git_rt, "git_checkpoint_create", {"cwd": str(repo)})
    path = repo / ".git" / "meith" / "checkpoints.json"
    entries = json.loads(path.read_text())
    forged = dict(entries[0], id="abc-00000000")  # still names the real checkpoint's ref
    path.write_text(json.dumps([forged, *entries]))
    listed = await call_ok(git_rt, "git_checkpoint_list", {"cwd": str(repo)})
    assert [c["id"] for c in listed] == [meta["id"]]


async def test_create_takes_message_as_git_commit_does(git_rt, busy_repo):
    """`message`, the name git_commit uses, is the label; two different ones are refused."""
    meta = await call_ok(
        git_rt, "git_checkpoint_create", {"cwd": str(busy_repo), "message": "before agent"}
    )
    assert meta["label"] == "before agent"
    same = {"cwd": str(busy_repo), "message": "x", "label": "x"}
    assert (await call_ok(git_rt, "git_checkpoint_create", same))["label"] == "x"
    code, message = await call_err(
        git_rt, "git_checkpoint_create", {"cwd": str(busy_repo), "message": "a", "label": "b"}
    )
    assert code == "VALIDATION_ERROR"
    assert "label or message" in message
