"""Each tool's result as the compact text a model reads: numbered lines, `path:line:col: text`
hits, diffs as diffs. The structured result stays the source of truth; this is its view."""

from __future__ import annotations

import json
from itertools import chain, repeat
from typing import Any, Final


def _name(path: str) -> str:
    # A name with a line break (or other control characters) is quoted, so that one hit or
    # one listed file stays one line.
    return json.dumps(path, ensure_ascii=False) if not path.isprintable() else path


#: `"1\t"`, `"2\t"`, …: line-number prefixes made once (up to this many) and reused.
_PREFIX_CACHE_MAX: Final = 100_000
_prefixes: list[str] = []


def _prefix_list(first: int, count: int) -> list[str]:
    global _prefixes
    last = first - 1 + count
    if last > len(_prefixes) and last <= _PREFIX_CACHE_MAX:
        grown = _prefixes + [f"{i}\t" for i in range(len(_prefixes) + 1, last + 1)]
        _prefixes = grown  # one assignment: a concurrent reader sees the old or the new list
    if last <= len(_prefixes):
        return _prefixes[first - 1 : last]
    return [f"{i}\t" for i in range(first, last + 1)]


def numbered(text: str, first: int) -> str:
    """`text` with each line prefixed by its number and a tab (like `cat -n`), joined in one
    pass in C so that numbering a 1 MiB read costs milliseconds."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        return ""
    pieces = chain.from_iterable(zip(_prefix_list(first, len(lines)), lines, repeat("\n")))
    return "".join(pieces)[:-1]


def read_file(c: dict[str, Any]) -> str:
    first = c["offset"]
    body = numbered(c["content"], first)
    last = first + c["lineCount"] - 1
    head = (
        f"{_name(c['path'])} lines {first}-{last} of {c['totalLines']} "
        f"({c['encoding']}, {c['lineEnding']}, sha256 {c['sha256']})"
    )
    if c["truncated"]:
        head += f"; more follows: offset {last + 1}"
    return f"{head}\n{body}" if body else head


def _steps(n: int) -> str:
    return f"{n} undo step" if n == 1 else f"{n} undo steps"


def _written(c: dict[str, Any], verb: str, left: str = "") -> str:
    head = f"{verb} {_name(c['path'])} (sha256 {c['sha256']}; {_steps(c['undoSteps'])}{left})"
    return f"{head}\n{c['diff']}" if c.get("diff") else f"{head}; no change"


def write_file(c: dict[str, Any]) -> str:
    return _written(c, "created" if c["created"] else "wrote")


def apply_patch(c: dict[str, Any]) -> str:
    if c["dryRun"]:
        return f"dry run: {_replacements(c)} in {_name(c['path'])}, nothing written\n{c['diff']}"
    return _written(c, f"applied {_replacements(c)} to")


def _replacements(c: dict[str, Any]) -> str:
    n = int(c["applied"])
    return f"{n} replacement" if n == 1 else f"{n} replacements"


def undo(c: dict[str, Any]) -> str:
    if c["restored"] == "deleted":
        return f"removed {_name(c['path'])} (meith had created it); {_steps(c['undoSteps'])} left"
    return _written(c, "restored", " left")


def list_files(c: dict[str, Any]) -> str:
    files = c["files"]
    # One check in C for the usual listing, where no name needs quoting.
    lines = list(files) if "".join(files).isprintable() else [_name(p) for p in files]
    if c["truncated"]:
        lines.append(f"... limit of {c['count']} reached; narrow with path or glob")
    return "\n".join(lines) if lines else "no files"


def search(c: dict[str, Any]) -> str:
    """`path:line:col: text` per hit; context lines as `path-line- text`, each line once, and
    `--` between runs of lines that do not follow each other (as grep prints them)."""
    out: list[str] = []
    last: tuple[str, int] | None = None  # the file and line printed last
    for m in c["matches"]:
        name = _name(m["path"])
        before = m.get("before")
        first = m["line"] - len(before or [])
        if before is not None and last is not None and last != (m["path"], first - 1):
            out.append("--")
        for i, text in enumerate(before or [], first):
            out.append(f"{name}-{i}- {text}")
        out.append(f"{name}:{m['line']}:{m['column']}: {m['text']}")
        for i, text in enumerate(m.get("after") or [], m["line"] + 1):
            out.append(f"{name}-{i}- {text}")
        last = (m["path"], m["line"] + len(m.get("after") or []))
    if c["truncated"]:
        out.append(f"... limit of {c['count']} matches reached; narrow the query, path or glob")
    return "\n".join(out) if out else "no matches"
