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


XyFields = tuple[str, str, str, bool, bool, bool]

#: XY (porcelain v2 bytes, "." for unmodified) -> (status, indexStatus, worktreeStatus,
#: staged, unstaged, untracked).
_XY_FIELDS: dict[bytes, XyFields] = {}


def _xy_fields(xy: bytes) -> XyFields:
    fields = _XY_FIELDS.get(xy)
    if fields is None:
        text = xy.decode("ascii", "replace").replace(".", " ")
        x, y = text[0:1] or " ", text[1:2] or " "
        untracked = x == "?"
        fields = (
            status_word(x, y),
            x,
            y,
            not untracked and x != " ",
            not untracked and y != " ",
            untracked,
        )
        _XY_FIELDS[xy] = fields
    return fields


def _file(path: str, xy: bytes, original: str | None = None) -> dict[str, Any]:
    # A dict literal: this runs once per changed file (tens of thousands on big repos).
    status, x, y, staged, unstaged, untracked = _xy_fields(xy)
    if original is None:
        return {
            "path": path,
            "status": status,
            "indexStatus": x,
            "worktreeStatus": y,
            "staged": staged,
            "unstaged": unstaged,
            "untracked": untracked,
        }
    return {
        "path": path,
        "originalPath": original,
        "status": status,
        "indexStatus": x,
        "worktreeStatus": y,
        "staged": staged,
        "unstaged": unstaged,
        "untracked": untracked,
    }


def _ordinary_path_offset(rec: bytes) -> int:
    """Where the path starts in a `1 ...` record: its fields before the path have a fixed width
    for a given object format, so this is found once per parse."""
    return len(b" ".join(rec.split(b" ", 8)[:8])) + 1


def parse_porcelain_v2(data: bytes, root: str) -> dict[str, Any]:
    """Parse `status --porcelain=v2 --branch -z` into GitStatusResult."""
    result = empty_status(root, is_repo=True)
    oid: str | None = None
    head: str | None = None
    files: list[dict[str, Any]] = []
    records = data.split(b"\0")
    offset = 0
    i = 0
    n = len(records)
    while i < n:
        rec = records[i]
        i += 1
        if not rec:
            continue
        kind = rec[:2]
        if kind == b"1 ":
            if rec[offset - 1 : offset] != b" " or offset == 0:
                offset = _ordinary_path_offset(rec)
            files.append(_file(rec[offset:].decode("utf-8", "replace"), rec[2:4]))
        elif kind == b"2 ":
            parts = rec.split(b" ", 9)
            original = _decode(records[i]) if i < n else None
            i += 1
            files.append(_file(_decode(parts[9]), parts[1], original))
        elif kind == b"u ":
            parts = rec.split(b" ", 10)
            files.append(_file(_decode(parts[10]), parts[1]))
        elif kind == b"? ":
            files.append(_file(_decode(rec[2:]), b"??"))
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
