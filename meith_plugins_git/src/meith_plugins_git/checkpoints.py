"""Checkpoints: snapshots of the work tree and the index as hidden commits.

Create never touches the user's index, files, HEAD or branch: it works on copies of the index
(`GIT_INDEX_FILE`) and writes only objects, one ref `refs/meith/checkpoints/<id>` and the
metadata file `<git-dir>/meith/checkpoints.json`.

Layout (like `git stash`): an *index commit* whose tree is the staged state, and the
*checkpoint commit* whose tree is the work tree (tracked and untracked, not ignored) with
parents `[HEAD, index commit]` (`[index commit]` before the first commit). Both trees are also
in the metadata (`worktreeTree`, `indexTree`), so restore brings back staged vs unstaged.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import stat
import time
from typing import Any, Final

from meith_core import ErrorCode, PathEscapeError, ToolError, write_file_beneath
from meith_plugins_git.diff import DIFF_OPTIONS, parse_raw_numstat
from meith_plugins_git.locks import RepoLocks
from meith_plugins_git.process import Completed
from meith_plugins_git.repo import EMPTY_TREE, Repo
from meith_plugins_git.runner import READ_ONLY, WRITE, GitFailed
from meith_plugins_git.status import read_status
from meith_plugins_git.validate import check_revision

CHECKPOINT_REF_PREFIX: Final = "refs/meith/checkpoints"
CHECKPOINT_ID_RE: Final = re.compile(r"^[0-9a-z]{1,16}-[0-9a-z]{8}$")
MAX_METADATA_BYTES: Final = 16 * 1024 * 1024
_ALPHABET: Final = "0123456789abcdefghijklmnopqrstuvwxyz"
#: Checkpoint commits are plumbing: a fixed identity, so they work without user.name/email.
CHECKPOINT_IDENTITY: Final = {
    "GIT_AUTHOR_NAME": "meith",
    "GIT_AUTHOR_EMAIL": "meith@localhost",
    "GIT_COMMITTER_NAME": "meith",
    "GIT_COMMITTER_EMAIL": "meith@localhost",
}


def _base36(value: int) -> str:
    out = ""
    while True:
        value, digit = divmod(value, 36)
        out = _ALPHABET[digit] + out
        if value == 0:
            return out


def new_checkpoint_id() -> str:
    """`<epoch ms in base36>-<8 random base36 chars>`: sorts by time, short to type."""
    suffix = "".join(secrets.choice(_ALPHABET) for _ in range(8))
    return f"{_base36(time.time_ns() // 1_000_000)}-{suffix}"


# -- metadata ---------------------------------------------------------------------------


METADATA_RELATIVE: Final = "meith/checkpoints.json"


def metadata_path(repo: Repo) -> str:
    return os.path.join(repo.git_dir, METADATA_RELATIVE)


def read_metadata(repo: Repo) -> list[dict[str, Any]]:
    """Newest first; a missing or corrupt file is an empty list, and so is one reached through
    a symbolic link (it would be someone else's file)."""
    path = metadata_path(repo)
    if os.path.islink(os.path.dirname(path)):
        return []
    try:
        with open(path, "rb", opener=_no_follow) as fh:
            raw = fh.read(MAX_METADATA_BYTES + 1)
        data = json.loads(raw) if len(raw) <= MAX_METADATA_BYTES else None
    except (OSError, ValueError):
        return []
    if not isinstance(data, list):
        return []
    return [
        e
        for e in data
        if isinstance(e, dict)
        and isinstance(e.get("id"), str)
        and CHECKPOINT_ID_RE.fullmatch(e["id"])
        # The file lives in the repository: an entry must name its own ref.
        and e.get("ref") == f"{CHECKPOINT_REF_PREFIX}/{e['id']}"
    ]


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW)


def write_metadata(repo: Repo, entries: list[dict[str, Any]]) -> None:
    # The git dir is the repository's: a `meith` link planted in it must not carry the write
    # out of the grant.
    data = (json.dumps(entries, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    try:
        write_file_beneath(repo.git_dir, METADATA_RELATIVE, data, mode=0o644)
    except PathEscapeError as exc:
        raise ToolError(ErrorCode.TOOL_FAILED, f"Checkpoint metadata not written: {exc}") from None


async def existing_refs(repo: Repo) -> set[str]:
    done = await repo.run(
        ["for-each-ref"],
        ["--format=%(refname)"],
        operands=[CHECKPOINT_REF_PREFIX + "/"],
        profile=READ_ONLY,
    )
    return set(done.stdout.decode("utf-8", "replace").split())


# -- create -----------------------------------------------------------------------------


async def create(
    repo: Repo,
    locks: RepoLocks,
    *,
    label: str | None,
    source: str | None,
    session_id: str | None,
    tool_call_id: str | None,
) -> dict[str, Any]:
    checkpoint_id = new_checkpoint_id()
    ref = f"{CHECKPOINT_REF_PREFIX}/{checkpoint_id}"
    work = _work_dir(repo)
    index_copy = os.path.join(work, f"tmp-{checkpoint_id}.index")
    snapshot = os.path.join(work, f"tmp-{checkpoint_id}-work.index")
    user_index = os.path.join(repo.git_dir, "index")
    async with locks.hold(repo):
        try:
            # Copies keep the stat data, so `add -A` hashes only what changed.
            has_index = _copy_if_exists(user_index, index_copy)
            _copy_if_exists(user_index, snapshot)
            index_tree = await _write_tree(repo, index_copy if has_index else None)
            if not has_index and repo.head is not None:
                # No index file yet: start the snapshot from HEAD.
                await _plumb(repo, ["read-tree"], operands=[repo.head], index=snapshot)
            await _plumb(repo, ["add"], ["-A"], index=snapshot, paths=[])
            worktree_tree = await _write_tree(repo, snapshot)
            assert worktree_tree is not None
            parents = [repo.head] if repo.head else []
            index_commit = await _commit_tree(
                repo,
                index_tree or worktree_tree,
                parents,
                f"index of meith checkpoint {checkpoint_id}",
            )
            message = label or f"Meith checkpoint {checkpoint_id}"
            commit = await _commit_tree(repo, worktree_tree, [*parents, index_commit], message)
            await _plumb(
                repo,
                ["update-ref"],
                ["-m", "meith checkpoint"],
                operands=[ref, commit, "0" * len(commit)],
            )
        finally:
            for path in (index_copy, snapshot):
                for leftover in (path, path + ".lock"):
                    with contextlib.suppress(OSError):
                        os.unlink(leftover)
        meta: dict[str, Any] = {
            "id": checkpoint_id,
            "ref": ref,
            "root": repo.root,
            "baseHead": repo.head,
            "createdAt": time.time_ns() // 1_000_000,
        }
        for key, value in (
            ("label", label),
            ("source", source),
            ("sessionId", session_id),
            ("toolCallId", tool_call_id),
        ):
            if value is not None:
                meta[key] = value
        meta["worktreeTree"] = worktree_tree
        meta["indexTree"] = index_tree
        live = await existing_refs(repo)
        entries = [e for e in read_metadata(repo) if e.get("ref") in live]
        write_metadata(repo, [meta, *entries])
    return meta


def _work_dir(repo: Repo) -> str:
    """`<git-dir>/meith`, refused before anything is written when it is not a real directory
    (a planted link would carry the index copies and the metadata out of the grant)."""
    work = os.path.join(repo.git_dir, os.path.dirname(METADATA_RELATIVE))
    with contextlib.suppress(FileExistsError):
        os.mkdir(work, 0o755)
    if not stat.S_ISDIR(os.lstat(work).st_mode):
        raise ToolError(
            ErrorCode.TOOL_FAILED,
            f"Checkpoint not created: {work} is a symbolic link or not a directory.",
            {"path": work},
        )
    return work


def _copy_if_exists(src: str, dst: str) -> bool:
    try:
        shutil.copy2(src, dst)
    except FileNotFoundError:
        return False
    return True


async def _plumb(
    repo: Repo,
    command: list[str],
    options: list[str] | None = None,
    *,
    operands: list[str] | None = None,
    paths: list[str] | None = None,
    index: str | None = None,
    stdin: bytes | None = None,
    env: dict[str, str] | None = None,
    profile: Any = WRITE,
) -> Completed:
    extra = dict(env or {})
    if index is not None:
        extra["GIT_INDEX_FILE"] = index
    return await repo.run(
        command,
        options or [],
        operands=operands or [],
        paths=paths,
        stdin=stdin,
        env=extra,
        profile=profile,
    )


async def _write_tree(repo: Repo, index: str | None) -> str | None:
    """The tree of an index file; None when it cannot be written (unmerged entries)."""
    if index is None:
        return EMPTY_TREE
    try:
        done = await _plumb(repo, ["write-tree"], index=index)
    except GitFailed:
        return None
    return done.stdout.decode("ascii").strip()


async def _commit_tree(repo: Repo, tree: str, parents: list[str], message: str) -> str:
    options: list[str] = ["--no-gpg-sign"]
    for parent in parents:
        options += ["-p", parent]
    # The message goes through stdin: a label can never become an option.
    done = await _plumb(
        repo,
        ["commit-tree"],
        options,
        operands=[tree],
        stdin=message.encode("utf-8", "surrogateescape"),
        env=CHECKPOINT_IDENTITY,
    )
    return done.stdout.decode("ascii").strip()


# -- list, restore, compare -------------------------------------------------------------


async def list_checkpoints(repo: Repo) -> list[dict[str, Any]]:
    """Entries whose ref still exists (the file is pruned at the next create)."""
    entries = read_metadata(repo)
    if not entries:
        return []
    live = await existing_refs(repo)
    return [e for e in entries if e.get("ref") in live]


def _find(repo: Repo, entries: list[dict[str, Any]], checkpoint_id: str) -> dict[str, Any]:
    for entry in entries:
        if entry.get("id") == checkpoint_id:
            return entry
    raise ToolError(ErrorCode.TOOL_FAILED, f"Unknown checkpoint: {checkpoint_id}")


async def restore(
    repo: Repo, locks: RepoLocks, checkpoint_id: str, *, force: bool
) -> dict[str, Any]:
    async with locks.hold(repo):
        entry = _find(repo, await list_checkpoints(repo), checkpoint_id)
        base = entry.get("baseHead")
        if repo.head != base and not force:
            raise ToolError(
                ErrorCode.TOOL_FAILED,
                f"HEAD has moved since checkpoint {checkpoint_id} was taken (was {base or 'unborn'}, "
                f"now {repo.head or 'unborn'}); restoring would mix two histories. Pass force: "
                "true to restore its files anyway.",
                {"baseHead": base, "head": repo.head},
            )
        ref = entry["ref"]
        worktree_tree = await _tree_of(repo, ref)
        index_tree = entry.get("indexTree")
        # Untracked files that are not in the checkpoint go; ignored files stay.
        await _plumb(repo, ["clean"], ["-f", "-d", "-q"], paths=[])
        # Index and files become the checkpoint's work tree...
        await _plumb(repo, ["read-tree"], ["--reset", "-u"], operands=[worktree_tree])
        # ...then the index goes back to what was staged (HEAD itself never moves).
        staged = index_tree or repo.head or EMPTY_TREE
        await _plumb(repo, ["read-tree"], operands=[staged])
        await _plumb(repo, ["update-index"], ["-q", "--refresh"], profile=WRITE)
        status = await read_status(repo)
    return {"checkpoint": entry, "status": status}


async def _tree_of(repo: Repo, ref: str) -> str:
    done = await repo.run(
        ["log"], ["--max-count=1", "--format=%T"], operands=[ref], paths=[], profile=READ_ONLY
    )
    return done.stdout.decode("ascii").strip()


async def _resolve(repo: Repo, value: str, entries: list[dict[str, Any]]) -> str:
    """A checkpoint id (→ its ref) or any revision that names a commit."""
    if CHECKPOINT_ID_RE.fullmatch(value):
        for entry in entries:
            if entry.get("id") == value:
                return str(entry["ref"])
    rev = check_revision(value, "ref")
    try:
        await repo.run(["rev-list"], ["--max-count=1"], operands=[rev], paths=[], profile=READ_ONLY)
    except GitFailed:
        raise ToolError(ErrorCode.TOOL_FAILED, f"Unknown checkpoint or ref: {value}") from None
    return rev


async def compare(repo: Repo, left: str, right: str, include_patch: bool) -> dict[str, Any]:
    entries = read_metadata(repo)
    left_ref = await _resolve(repo, left, entries)
    right_ref = await _resolve(repo, right, entries)
    operands = [left_ref, right_ref]
    stat = await repo.run(
        ["diff"], [*DIFF_OPTIONS, "--stat"], operands=operands, paths=[], profile=READ_ONLY
    )
    summary = await repo.run(
        ["diff"], [*DIFF_OPTIONS, "--raw", "--numstat", "-z"], operands=operands, paths=[],
        profile=READ_ONLY,
    )  # fmt: skip
    patch = ""
    if include_patch:
        done = await repo.run(
            ["diff"], [*DIFF_OPTIONS, "--patch"], operands=operands, paths=[], profile=READ_ONLY
        )
        patch = done.stdout.decode("utf-8", "replace")
    files = [
        {k: f[k] for k in ("path", "additions", "deletions", "binary")}
        for f in parse_raw_numstat(summary.stdout)
    ]
    return {
        "left": left_ref,
        "right": right_ref,
        "stat": stat.stdout.decode("utf-8", "replace"),
        "files": files,
        "patch": patch,
    }
