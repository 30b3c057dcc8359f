"""ripgrep: finding the binary, the one argv builder, and running it as a bounded stream.

`rg` comes from the `ripgrep` wheel (installed beside this interpreter's scripts) or, failing
that, from PATH. It runs with `--no-config` and a fixed environment (a `RIPGREP_CONFIG_PATH`
could otherwise add `--pre`, which runs a program per file), never follows links, and reads
caller text only as the value of `--regexp` and paths only after `--`.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import anyio
import anyio.to_thread

from meith_core import ErrorCode, ToolError
from meith_plugins_files.hits import Hit, add_context, parse_record, strip_line

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
_READ_CHUNK: Final = 64 * 1024
#: Of rg's standard error, the start is kept (its message); the rest is read and dropped.
_MAX_STDERR: Final = 64 * 1024
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


def _env() -> dict[str, str]:
    env = {k: os.environ[k] for k in _ENV_KEYS if k in os.environ}
    env["PATH"] = os.defpath
    return env


class Run:
    """One rg: started with Popen, its pipes served by a worker thread with `selectors`.

    Not asyncio's subprocess transport: its child watcher and transports cost several
    milliseconds per process, against a listing or search that takes tens. Each read of rg's
    standard output goes to `consume` (in the worker thread) until rg closes it or `consume`
    says it has enough, which kills rg. A cancelled call kills and reaps rg before the
    cancellation goes on: no rg outlives its call.
    """

    def __init__(self, argv: list[str], cwd: str, pass_fds: tuple[int, ...] = ()) -> None:
        self.argv = argv
        self.cwd = cwd
        self.pass_fds = pass_fds
        self.proc: subprocess.Popen[bytes] | None = None
        self.stderr = b""
        self.stopped_early = False

    async def feed(self, consume: Callable[[bytes], bool]) -> None:
        """Run rg, passing each read of its output to `consume` (True: stop rg now)."""
        # Popen only starts the child (vfork + exec); nothing here waits for it on the loop.
        self.proc = proc = subprocess.Popen(  # noqa: ASYNC220
            self.argv,
            cwd=self.cwd,
            env=_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            close_fds=True,
            pass_fds=self.pass_fds,
        )
        try:
            await anyio.to_thread.run_sync(self._serve, consume, abandon_on_cancel=True)
        except BaseException:
            # Cancelled (or `consume` failed): the thread serving the pipes was abandoned or
            # ended; killing rg ends it, and rg is reaped before the call goes on. Shielded,
            # so a cancelled call still waits for that (SIGKILL makes the wait short).
            _kill(proc)
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(proc.wait)
            raise

    def _serve(self, consume: Callable[[bytes], bool]) -> None:
        proc = self.proc
        assert proc is not None
        assert proc.stdout is not None
        assert proc.stderr is not None
        stdout, stderr = proc.stdout, proc.stderr
        err = bytearray()
        try:
            with selectors.DefaultSelector() as sel:
                sel.register(stdout, selectors.EVENT_READ)
                sel.register(stderr, selectors.EVENT_READ)
                while sel.get_map():
                    for key, _events in sel.select():
                        chunk = os.read(key.fd, _READ_CHUNK)
                        if not chunk:
                            sel.unregister(key.fileobj)
                        elif key.fileobj is stderr:
                            if len(err) < _MAX_STDERR:  # keep the start: rg's message
                                err += chunk[: _MAX_STDERR - len(err)]
                        elif consume(chunk):
                            self.stopped_early = True
                            _kill(proc)
                            return
        except BaseException:
            _kill(proc)  # `consume` failed: rg is not left writing to a pipe nobody reads
            raise
        finally:
            stdout.close()
            stderr.close()
            proc.wait()
            self.stderr = bytes(err)

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


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()


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
