"""ripgrep: finding the binary, the one argv builder, and running it as a bounded stream.

`rg` comes from the `ripgrep` wheel (installed beside this interpreter's scripts) or, failing
that, from PATH. It runs with `--no-config` and a fixed environment (a `RIPGREP_CONFIG_PATH`
could otherwise add `--pre`, which runs a program per file), never follows links, and reads
caller text only as the value of `--regexp` and paths only after `--`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio

from meith_core import ErrorCode, ToolError

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
#: Longest line text kept in a search hit.
MAX_HIT_CHARS: Final = 500
_STREAM_LIMIT: Final = 64 * 1024 * 1024
_ENV_KEYS: Final = ("HOME", "XDG_CONFIG_HOME", "LANG", "LC_ALL")


class RipgrepMissing(RuntimeError):
    pass


def locate() -> str | None:
    """The `rg` of the ripgrep wheel beside this interpreter, else one on PATH."""
    candidates = [
        Path(sysconfig.get_path("scripts")) / "rg",
        Path(sys.executable).parent / "rg",
    ]
    with contextlib.suppress(KeyError):
        candidates.append(Path(sysconfig.get_path("scripts", f"{os.name}_user")) / "rg")
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("rg")


def version(rg: str) -> str:
    done = subprocess.run(
        [rg, "--version"], capture_output=True, text=True, timeout=10, check=False
    )
    return (done.stdout.splitlines() or ["?"])[0]


@dataclass(frozen=True, slots=True)
class Walk:
    """What a listing or search walks: which files it skips."""

    include_ignored: bool = False
    glob: str | None = None
    excludes: tuple[str, ...] = ()

    def args(self) -> list[str]:
        out = ["--no-config", "--hidden", "--no-require-git", "--no-messages"]
        out += ["--glob", "!.git"]
        if self.include_ignored:
            out.append("--no-ignore")
        else:
            for name in DEFAULT_IGNORED_DIRS:
                out += ["--glob", f"!{name}/"]
        for rel in self.excludes:
            out += ["--glob", "!/" + rel]
        if self.glob:
            out += ["--glob", self.glob]
        return out


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


def _env() -> dict[str, str]:
    env = {k: os.environ[k] for k in _ENV_KEYS if k in os.environ}
    env["PATH"] = os.defpath
    return env


@dataclass
class Run:
    """A running rg whose stdout is read as a stream and which is killed when done with."""

    argv: list[str]
    cwd: str
    proc: asyncio.subprocess.Process | None = None
    stderr: bytes = b""
    stopped_early: bool = False
    _stderr_task: asyncio.Task[bytes] | None = field(default=None, repr=False)

    async def __aenter__(self) -> Run:
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv,
            cwd=self.cwd,
            env=_env(),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=_STREAM_LIMIT,
        )
        assert self.proc.stderr is not None
        self._stderr_task = asyncio.ensure_future(_read_capped(self.proc.stderr, 64 * 1024))
        return self

    async def __aexit__(self, *exc: object) -> None:
        proc = self.proc
        if proc is None:
            return
        # Shielded: a cancelled call (its deadline, the caller) still kills and reaps rg, so
        # no process outlives the call. SIGKILL makes the wait short.
        with anyio.CancelScope(shield=True):
            if proc.returncode is None:
                if exc[0] is not None or self.stopped_early:
                    with contextlib.suppress(ProcessLookupError):
                        proc.kill()
                await proc.wait()
            if self._stderr_task is not None:
                self.stderr = await self._stderr_task

    async def records(self) -> AsyncIterator[tuple[bytes, bytes]]:
        """`(path, rest)` for each line rg prints with `--null`: `path NUL rest NEWLINE`, where
        `rest` is `line:column:text` (a match) or `line-text` (context).

        A path may hold a newline but never a NUL; a line of text holds no newline (and no NUL:
        rg skips a file once it sees one). So the output is split at each NUL, and in each
        piece the first newline ends the previous record's text; what follows it starts the
        next record's path."""
        pending = b""
        async for chunk in self.chunks():
            pieces = (pending + chunk).split(b"\0")
            path = pieces[0]
            for piece in pieces[1:-1]:
                rest, _, following = piece.partition(b"\n")
                yield path, rest
                path = following
            last = pieces[-1]
            if len(pieces) > 1 and b"\n" in last:
                rest, _, pending = last.partition(b"\n")
                yield path, rest
            elif len(pieces) > 1:
                pending = path + b"\0" + last
            else:
                pending = path

    async def chunks(self) -> AsyncIterator[bytes]:
        assert self.proc is not None
        assert self.proc.stdout is not None
        stdout = self.proc.stdout
        while chunk := await stdout.read(1 << 16):
            yield chunk

    def stop(self) -> None:
        self.stopped_early = True
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()

    def failure(self) -> ToolError | None:
        """An error when rg failed (exit 2 with nothing useful found, or a bad pattern)."""
        assert self.proc is not None
        text = self.stderr.decode("utf-8", "replace").strip()
        if self.stopped_early or self.proc.returncode in (0, 1):
            return None
        if "regex parse error" in text or "error parsing regex" in text or "size limit" in text:
            return ToolError(
                ErrorCode.VALIDATION_ERROR,
                f"query is not a valid regular expression: {text[:2000]}",
                {"reason": "bad pattern"},
            )
        if text:
            return ToolError(ErrorCode.TOOL_FAILED, f"ripgrep failed: {text[:2000]}")
        return None


async def _read_capped(stream: asyncio.StreamReader, cap: int) -> bytes:
    # Until EOF (rg writes one message in several pieces), keeping the first `cap` bytes.
    kept = b""
    while chunk := await stream.read(1 << 16):
        if len(kept) < cap:
            kept += chunk[: cap - len(kept)]
    return kept


async def list_files(
    rg: str, cwd: str, walk: Walk, path: str, limit: int
) -> tuple[list[str], bool]:
    """Up to `limit` paths (relative to `cwd`) and whether more were left out."""
    out: list[str] = []
    truncated = False
    async with Run(files_argv(rg, walk, path), cwd) as run:
        rest = b""
        async for chunk in run.chunks():
            # The whole read at once: one decode and one split per 64 KiB, not per name.
            complete, sep, rest = (rest + chunk).rpartition(b"\0")
            if not sep:  # no complete name yet: all of it is `rest`
                continue
            names = _relative_names(complete) if complete else []
            room = limit - len(out)
            if len(names) > room:
                out += names[:room]
                truncated = True
                run.stop()
                break
            out += names
        if rest and not truncated:
            tail = _relative(rest)
            if tail is not None:
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


def _record(rest: bytes) -> tuple[int, int | None, bytes] | None:
    """`line:column:text` -> (line, byte column, text); `line-text` (context) -> (line, None,
    text); anything else (never printed by rg) -> None."""
    digits = len(rest) - len(rest.lstrip(b"0123456789"))
    if not digits:
        return None
    line, sep = int(rest[:digits]), rest[digits : digits + 1]
    if sep == b"-":
        return line, None, rest[digits + 1 :]
    if sep != b":":
        return None
    column, colon, text = rest[digits + 1 :].partition(b":")
    if not colon or not column.isdigit():
        return None
    return line, int(column), text


@dataclass
class Hit:
    path: str
    line: int
    column: int
    text: str
    before: list[str] | None = None
    after: list[str] | None = None

    def as_json(self) -> dict[str, Any]:
        """The hit as `SearchMatch` writes it, without the absent context keys."""
        out: dict[str, Any] = {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "text": self.text,
        }
        if self.before is not None:
            out["before"] = self.before
        if self.after is not None:
            out["after"] = self.after
        return out


def _strip(line: str) -> str:
    line = line.rstrip("\r\n")
    return line if len(line) <= MAX_HIT_CHARS else line[:MAX_HIT_CHARS] + "…"


async def search(
    rg: str, cwd: str, argv: list[str], limit: int, context: int
) -> tuple[list[Hit], bool]:
    """Up to `limit` matching lines and whether more were left out."""
    hits: list[Hit] = []
    truncated = False
    # Per file: line number -> text of every line seen (matches and context), for context.
    seen: dict[int, str] = {}
    file_hits: list[Hit] = []

    def close_file() -> None:
        if context:
            for hit in file_hits:
                hit.before = _around(seen, range(hit.line - context, hit.line))
                hit.after = _around(seen, range(hit.line + 1, hit.line + context + 1))
        seen.clear()
        file_hits.clear()

    current = b""
    path = ""
    async with Run(argv, cwd) as run:
        async for raw_path, rest in run.records():
            parsed = _record(rest)
            if parsed is None:
                continue
            line, byte_column, raw_text = parsed
            if raw_path != current:  # rg prints each file's lines together
                close_file()
                current = raw_path
                path = raw_path.decode("utf-8", "replace")
                if path.startswith("./"):
                    path = path[2:]
            text = raw_text.decode("utf-8", "replace")
            if byte_column is None:
                if context:
                    seen[line] = _strip(text)
                continue
            if len(hits) >= limit:
                truncated = True
                run.stop()
                break
            # rg counts the column in bytes; a hit's column counts characters.
            column = len(raw_text[: byte_column - 1].decode("utf-8", "replace")) + 1
            hit = Hit(path, line, column, _strip(text))
            hits.append(hit)
            if context:
                seen[line] = hit.text
                file_hits.append(hit)
        close_file()
    if not truncated and (error := run.failure()) is not None:
        raise error
    return hits, truncated


def _around(seen: dict[int, str], lines: Iterable[int]) -> list[str]:
    return [seen[n] for n in lines if n in seen]
