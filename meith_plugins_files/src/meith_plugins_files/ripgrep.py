"""ripgrep: the one argv builder, and its output read as listings and search hits (finding
and running rg is `rg_run`).

rg runs with `--no-config` and a fixed environment (a `RIPGREP_CONFIG_PATH` could otherwise add
`--pre`, which runs a program per file), never follows links, reads caller text only as the
value of `--regexp` and paths only after `--`, and is given names only as literal globs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from meith_plugins_files.hits import Hit, add_context, parse_record, strip_line
from meith_plugins_files.rg_run import Run

#: Directories skipped unless `includeIgnored`: the original's list, and Python's caches.
DEFAULT_IGNORED_DIRS: Final = (
    "node_modules",
    ".next",
    "dist",
    "out",
    ".turbo",
    ".cache",
    "coverage",
    "__pycache__",
    ".venv",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".tox",
    ".nox",
)
#: Files larger than this are not searched.
MAX_SEARCH_FILE: Final = "1M"


@dataclass(frozen=True, slots=True)
class Walk:
    """What a listing or search walks: which files it skips."""

    include_ignored: bool = False
    glob: str | None = None
    #: Paths skipped (relative to where rg runs), matched literally.
    excludes: tuple[str, ...] = ()
    #: File-name patterns skipped wherever they are (globs on the name).
    excluded_names: tuple[str, ...] = ()

    def args(self) -> list[str]:
        out = ["--no-config", "--hidden", "--no-require-git", "--no-messages"]
        out += ["--glob", "!.git"]
        if self.include_ignored:
            out.append("--no-ignore")
        else:
            for name in DEFAULT_IGNORED_DIRS:
                out += ["--glob", f"!{name}/"]
        for rel in self.excludes:
            out += ["--glob", "!/" + glob_literal(rel)]
        for pattern in self.excluded_names:
            out += ["--glob", "!" + pattern]
        if self.glob:
            out += ["--glob", self.glob]
        return out


#: What a glob gives a meaning to; each is escaped with a backslash to stand for itself.
_GLOB_SPECIAL: Final = frozenset("\\*?[]{}")


def glob_literal(path: str) -> str:
    """`path` as a glob that matches exactly that path (`vault[1]` names `vault[1]`, not
    `vault1`)."""
    return "".join("\\" + c if c in _GLOB_SPECIAL else c for c in path)


def files_argv(rg: str, walk: Walk, path: str) -> list[str]:
    # No path for the directory itself: rg then prints names without a `./` to strip (in
    # `--files` mode it never reads standard input).
    return [rg, "--files", "--null", *walk.args(), "--", *([] if path == "." else [path])]


def search_argv(
    rg: str,
    walk: Walk,
    path: str,
    *,
    query: str,
    regex: bool,
    case_sensitive: bool,
    context: int,
) -> list[str]:
    # rg's own line format, not --json: `path NUL line:column:text` for a match and
    # `path NUL line-text` for context, which rg writes and Python splits several times faster
    # than JSON events it would have to decode one by one (see `records`).
    argv = [rg, "--null", "--line-number", "--column", "--no-heading", "--with-filename"]
    argv += ["--no-context-separator", "--color", "never"]
    argv += [*walk.args(), "--max-filesize", MAX_SEARCH_FILE]
    # Rust's regex engine runs in linear time; these bound what a pattern may compile to.
    argv += ["--regex-size-limit", "16M", "--dfa-size-limit", "16M"]
    if not regex:
        argv.append("--fixed-strings")
    argv.append("--case-sensitive" if case_sensitive else "--ignore-case")
    if context:
        argv += ["--context", str(context)]
    return [*argv, "--regexp", query, "--", path]


class Records:
    """Splits rg's `--null` line output, read by read, into `(path, rest)` records: `path NUL
    rest NEWLINE`, where `rest` is `line:column:text` (a match) or `line-text` (context).

    A path may hold a newline but never a NUL; a line of text holds no newline (and no NUL:
    rg skips a file once it sees one). So the output is split at each NUL, and in each piece
    the first newline ends the previous record's text; what follows it starts the next
    record's path. A record cut across two reads is kept until its end comes."""

    def __init__(self) -> None:
        self._pending = b""

    def split(self, chunk: bytes) -> list[tuple[bytes, bytes]]:
        pieces = (self._pending + chunk).split(b"\0")
        out: list[tuple[bytes, bytes]] = []
        path = pieces[0]
        for piece in pieces[1:-1]:
            rest, _, following = piece.partition(b"\n")
            out.append((path, rest))
            path = following
        last = pieces[-1]
        if len(pieces) > 1 and b"\n" in last:
            rest, _, self._pending = last.partition(b"\n")
            out.append((path, rest))
        elif len(pieces) > 1:
            self._pending = path + b"\0" + last
        else:
            self._pending = path
        return out


async def list_files(
    rg: str, cwd: str, walk: Walk, path: str, limit: int, *, prefix: str = ""
) -> tuple[list[str], bool]:
    """Up to `limit` paths (relative to `cwd`, each after `prefix`) and whether more were left
    out."""
    out: list[str] = []
    truncated = False
    rest = b""

    def consume(chunk: bytes) -> bool:
        nonlocal rest, truncated
        # The whole read at once: one decode and one split per read, not per name.
        complete, sep, rest = (rest + chunk).rpartition(b"\0")
        if not sep:  # no complete name yet: all of it is `rest`
            return False
        names = _relative_names(complete) if complete else []
        if prefix:
            names = [prefix + n for n in names]
        room = limit - len(out)
        if len(names) > room:
            out.extend(names[:room])
            truncated = True
            return True
        out.extend(names)
        return False

    run = Run(files_argv(rg, walk, path), cwd)
    await run.feed(consume)
    if rest and not truncated:
        tail = _relative(rest)
        if tail is not None:
            tail = prefix + tail
            if len(out) >= limit:
                truncated = True
            else:
                out.append(tail)
    if not truncated and (error := run.failure()) is not None:
        raise error
    return out, truncated


def _relative_names(block: bytes) -> list[str]:
    """NUL-separated paths as rg prints them, without a leading `./`; a name that is not
    UTF-8 is skipped (it is not representable in JSON text)."""
    try:
        names = block.decode("utf-8").split("\0")
    except UnicodeDecodeError:
        return [n for n in map(_relative, block.split(b"\0")) if n is not None]
    if names and names[0].startswith("./"):
        return [n[2:] if n.startswith("./") else n for n in names]
    return names


def _relative(raw: bytes) -> str | None:
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None  # not representable in JSON text; such names are skipped
    return name[2:] if name.startswith("./") else name


async def search(
    rg: str,
    cwd: str,
    argv: list[str],
    limit: int,
    context: int,
    *,
    prefix: str = "",
    named: str | None = None,
    pass_fds: tuple[int, ...] = (),
) -> tuple[list[Hit], bool]:
    """Up to `limit` matching lines and whether more were left out. Hit paths are rg's,
    relative to `cwd`, after `prefix`; or `named` for every hit (one file searched through its
    descriptor in `pass_fds`)."""
    hits: list[Hit] = []
    truncated = False
    # Per file: line number -> text of every line seen (matches and context), for context.
    seen: dict[int, str] = {}
    file_hits: list[Hit] = []

    def close_file() -> None:
        if context:
            add_context(file_hits, seen, context)
        seen.clear()
        file_hits.clear()

    current = b""
    path = ""
    records = Records()

    def consume(chunk: bytes) -> bool:
        nonlocal current, path, truncated
        for raw_path, rest in records.split(chunk):
            parsed = parse_record(rest)
            if parsed is None:
                continue
            line, byte_column, raw_text = parsed
            if raw_path != current:  # rg prints each file's lines together
                close_file()
                current = raw_path
                path = raw_path.decode("utf-8", "replace")
                if path.startswith("./"):
                    path = path[2:]
                path = named if named is not None else prefix + path
            text = raw_text.decode("utf-8", "replace")
            if byte_column is None:
                if context:
                    seen[line] = strip_line(text)
                continue
            if len(hits) >= limit:
                truncated = True
                return True
            # rg counts the column in bytes; a hit's column counts characters.
            column = len(raw_text[: byte_column - 1].decode("utf-8", "replace")) + 1
            hit = Hit(path, line, column, strip_line(text))
            hits.append(hit)
            if context:
                seen[line] = hit.text
                file_hits.append(hit)
        return False

    run = Run(argv, cwd, pass_fds)
    await run.feed(consume)
    close_file()
    if not truncated and (error := run.failure()) is not None:
        raise error
    return hits, truncated
