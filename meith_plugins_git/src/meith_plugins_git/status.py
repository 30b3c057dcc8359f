"""`git_status`: GitStatusResult from one `git status --porcelain=v2 --branch -z`."""

from __future__ import annotations

from typing import Any, Final

from meith_plugins_git.repo import Repo
from meith_plugins_git.runner import READ_ONLY

#: `--ignore-submodules=dirty`: a submodule's own work tree would be inspected by a child git
#: reading the submodule's config, which was never checked. New commits in a submodule still show.
STATUS_OPTIONS: Final = ("--porcelain=v2", "--branch", "-z", "--ignore-submodules=dirty")

_WORDS: Final = {
    "M": "modified",
    "A": "added",
    "D": "deleted",
    "R": "renamed",
    "C": "copied",
    "T": "modified",
}


def empty_status(root: str | None = None, *, is_repo: bool = False) -> dict[str, Any]:
    return {
        "isRepo": is_repo,
        "root": root,
        "branch": None,
        "upstream": None,
        "ahead": 0,
        "behind": 0,
        "files": [],
        "staged": [],
        "unstaged": [],
        "untracked": [],
        "clean": True,
    }


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def status_word(x: str, y: str) -> str:
    if x == "?":
        return "untracked"
    if "U" in (x, y) or (x == y and x in "AD"):
        return "conflicted"
    code = x if x not in " ?" else y
    return _WORDS.get(code, "modified")


def _file(path: str, x: str, y: str, original: str | None = None) -> dict[str, Any]:
    untracked = x == "?"
    entry: dict[str, Any] = {"path": path}
    if original is not None:
        entry["originalPath"] = original
    entry.update(
        status=status_word(x, y),
        indexStatus=x,
        worktreeStatus=y,
        staged=not untracked and x != " ",
        unstaged=not untracked and y != " ",
        untracked=untracked,
    )
    return entry


def parse_porcelain_v2(data: bytes, root: str) -> dict[str, Any]:
    """Parse `status --porcelain=v2 --branch -z` into GitStatusResult."""
    result = empty_status(root, is_repo=True)
    oid: str | None = None
    head: str | None = None
    files: list[dict[str, Any]] = []
    records = data.split(b"\0")
    i = 0
    n = len(records)
    while i < n:
        rec = records[i]
        i += 1
        if not rec:
            continue
        kind = rec[:2]
        if kind == b"1 ":
            parts = rec.split(b" ", 8)
            xy = parts[1].decode("ascii", "replace").replace(".", " ")
            files.append(_file(_decode(parts[8]), xy[0], xy[1]))
        elif kind == b"2 ":
            parts = rec.split(b" ", 9)
            xy = parts[1].decode("ascii", "replace").replace(".", " ")
            original = _decode(records[i]) if i < n else None
            i += 1
            files.append(_file(_decode(parts[9]), xy[0], xy[1], original))
        elif kind == b"u ":
            parts = rec.split(b" ", 10)
            xy = parts[1].decode("ascii", "replace").replace(".", " ")
            files.append(_file(_decode(parts[10]), xy[0], xy[1]))
        elif kind == b"? ":
            files.append(_file(_decode(rec[2:]), "?", "?"))
        elif kind == b"# ":
            key, _, value = _decode(rec[2:]).partition(" ")
            if key == "branch.oid":
                oid = value
            elif key == "branch.head":
                head = value
            elif key == "branch.upstream":
                result["upstream"] = value
            elif key == "branch.ab":
                ahead, _, behind = value.partition(" ")
                result["ahead"] = abs(int(ahead or 0))
                result["behind"] = abs(int(behind or 0))
        # "! " (ignored) is not requested; anything else is skipped.
    if head == "(detached)":
        result["branch"] = oid[:12] if oid and oid != "(initial)" else None
    else:
        result["branch"] = head
    result["files"] = files
    result["staged"] = [f for f in files if f["staged"]]
    result["unstaged"] = [f for f in files if f["unstaged"]]
    result["untracked"] = [f for f in files if f["untracked"]]
    result["clean"] = not files
    return result


async def read_status(repo: Repo) -> dict[str, Any]:
    done = await repo.run(["status"], STATUS_OPTIONS, profile=READ_ONLY)
    return parse_porcelain_v2(done.stdout, repo.root)
