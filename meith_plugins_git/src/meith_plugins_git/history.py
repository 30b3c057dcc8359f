"""`git_log` and `git_blame`."""

from __future__ import annotations

from typing import Any, Final

from meith_core import ErrorCode, ToolError
from meith_plugins_git.repo import Repo
from meith_plugins_git.runner import READ_ONLY

_SEP: Final = "\x1f"
#: Subject last: it is the one field that could contain anything.
LOG_FORMAT: Final = "%H%x1f%h%x1f%an%x1f%ae%x1f%aI%x1f%D%x1f%s"


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def parse_log(data: bytes) -> list[dict[str, Any]]:
    out = []
    for record in data.split(b"\0"):
        text = _decode(record).strip("\n")
        if not text:
            continue
        fields = text.split(_SEP, 6)
        if len(fields) < 7:
            continue
        full, short, name, email, date, refs, subject = fields
        out.append(
            {
                "hash": full,
                "shortHash": short,
                "authorName": name,
                "authorEmail": email,
                "date": date,
                "subject": subject,
                "refs": [r for r in refs.split(", ") if r],
            }
        )
    return out


async def read_log(repo: Repo, limit: int, path: str | None) -> list[dict[str, Any]]:
    if repo.head is None:
        return []  # no commits yet
    done = await repo.run(
        ["log"],
        [
            f"--max-count={limit}",
            f"--format={LOG_FORMAT}",
            "-z",
            "--no-color",
            "--no-show-signature",
        ],
        operands=["HEAD"],
        paths=[path] if path else [],
        profile=READ_ONLY,
    )
    return parse_log(done.stdout)


def parse_line_porcelain(data: bytes) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    for raw in data.split(b"\n"):
        if raw.startswith(b"\t"):
            current["text"] = _decode(raw[1:])
            lines.append(
                {
                    "line": current.get("line", 0),
                    "hash": current.get("hash", ""),
                    "author": current.get("author", ""),
                    "authorTime": current.get("authorTime", 0),
                    "summary": current.get("summary", ""),
                    "text": current["text"],
                }
            )
            current = {}
            continue
        text = _decode(raw)
        if not current:
            parts = text.split(" ")
            if len(parts) >= 3 and len(parts[0]) >= 40:
                current = {"hash": parts[0], "line": int(parts[2])}
            continue
        key, _, value = text.partition(" ")
        if key == "author":
            current["author"] = value
        elif key == "author-time":
            current["authorTime"] = int(value) if value.isdigit() else 0
        elif key == "summary":
            current["summary"] = value
    return lines


async def read_blame(repo: Repo, path: str, start: int | None, end: int | None) -> dict[str, Any]:
    if start is not None and end is not None and end < start:
        raise ToolError(ErrorCode.VALIDATION_ERROR, "endLine must not be before startLine")
    options = ["--line-porcelain", "--no-textconv"]
    if start is not None or end is not None:
        options += ["-L", f"{start or 1},{end if end is not None else ''}"]
    # blame does not parse --end-of-options; no caller value goes before `--`.
    done = await repo.run(["blame"], options, paths=[path], profile=READ_ONLY)
    return {"path": path, "lines": parse_line_porcelain(done.stdout)}
