"""A change to a file through meith: refused when the file is no longer the version the
caller read, the old text decoded, and the new content written with its undo step and diff."""

from __future__ import annotations

from meith_core import ErrorCode, ToolError
from meith_plugins_files.diffs import unified
from meith_plugins_files.models import WriteResult
from meith_plugins_files.opened import Parent
from meith_plugins_files.textio import BinaryFile, Decoded, decode, sha256_hex
from meith_plugins_files.undo import UndoStore
from meith_plugins_files.writer import Current, replace_file


def conflict(target: Parent, expected: str, actual: str | None) -> ToolError:
    now = "does not exist" if actual is None else f"has sha256 {actual}"
    return ToolError(
        ErrorCode.TOOL_FAILED,
        f"{target.display} changed: expected sha256 {expected} but it {now}. Read it again "
        "and redo the change on its current content.",
        {"reason": "conflict", "expectedSha256": expected, "actualSha256": actual},
    )


def decoded(target: Parent, data: bytes) -> Decoded:
    try:
        return decode(data)
    except BinaryFile as exc:
        raise ToolError(
            ErrorCode.TOOL_FAILED,
            f"{target.display} is a binary file ({exc}); it is not edited as text",
            {"reason": "binary"},
        ) from None


def text_or_none(data: bytes | None) -> str | None:
    if data is None:
        return None
    try:
        return decode(data).text
    except BinaryFile:
        return ""


def commit_change(
    store: UndoStore,
    target: Parent,
    cur: Current,
    old_sha: str | None,
    old: Decoded | None,
    text: str,
    data: bytes,
    *,
    tool_name: str,
) -> WriteResult:
    """Replace the file with `data` (unless it already is), keep an undo step, diff it.
    `old_sha` is the sha256 of `cur.data` (None: no file)."""
    new_sha = sha256_hex(data)
    if cur.data == data:
        return WriteResult(
            path=target.display,
            created=False,
            changed=False,
            bytes=len(data),
            sha256=new_sha,
            previousSha256=old_sha,
            diff="",
            diffTruncated=False,
            undoSteps=store.count(target.path),
        )
    diff, cut = unified(old.text if old is not None else None, text, target.display)
    # The step first: a change meith made always has its undo step. A failed write takes
    # the step back.
    step, steps = store.push(target.path, cur.data, old_sha, cur.mode, new_sha, tool_name)
    try:
        replace_file(target, data, cur.mode)
    except BaseException:
        store.pop(target.path, step)
        raise
    return WriteResult(
        path=target.display,
        created=cur.data is None,
        changed=True,
        bytes=len(data),
        sha256=new_sha,
        previousSha256=old_sha,
        diff=diff,
        diffTruncated=cut,
        undoSteps=steps,
    )
