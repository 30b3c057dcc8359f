"""How the CLI prints results and streamed events, and which exit code a result gets."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from typing import Any, Final, TextIO

EXIT_OK = 0
EXIT_TOOL_FAILED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
EXIT_DENIED = 4
EXIT_TIMEOUT = 5
EXIT_INTERRUPTED = 130

_BY_CODE = {
    "VALIDATION_ERROR": EXIT_USAGE,
    "UNKNOWN_TOOL": EXIT_USAGE,
    "PERMISSION_DENIED": EXIT_DENIED,
    "TIMEOUT": EXIT_TIMEOUT,
    "RUNTIME_SHUTTING_DOWN": EXIT_UNREACHABLE,
    "PROTOCOL_ERROR": EXIT_UNREACHABLE,
}


def exit_code_for(result: dict[str, Any]) -> int:
    if result.get("ok"):
        return EXIT_OK
    error = result.get("error")
    if not isinstance(error, dict):
        error = {}
    return _BY_CODE.get(str(error.get("code")), EXIT_TOOL_FAILED)


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def print_result(
    result: dict[str, Any],
    *,
    as_json: bool,
    quiet: bool,
    verbose: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    if as_json:
        out.write(pretty(result) + "\n")
        return exit_code_for(result)
    if not quiet:
        for diag in result.get("diagnostics") or []:
            if isinstance(diag, dict):
                err.write(f"  [{diag.get('level', 'info')}] {diag.get('message', '')}\n")
    if not result.get("ok"):
        error = result.get("error")
        if not isinstance(error, dict):
            error = {}
        err.write(
            f"error ({error.get('code', 'TOOL_FAILED')}): {error.get('message', 'the tool failed')}\n"
        )
        # stderr keeps to the one documented line; details are for --verbose (and --json).
        details = error.get("details")
        if details is not None and verbose and not quiet:
            err.write(pretty(details) + "\n")
        return exit_code_for(result)
    content = result.get("content")
    if content is None:
        if not quiet:
            out.write("ok\n")
    elif isinstance(content, str):
        out.write(content if content.endswith("\n") else content + "\n")
    else:
        out.write(pretty(content) + "\n")
    return EXIT_OK


def fail(message: str, code: int, *, socket_path: str | None = None) -> int:
    sys.stderr.write(f"error: {message}\n")
    if socket_path:
        sys.stderr.write(f"socket: {socket_path}\n")
    return code


class EventPrinter:
    """Streams events while a call runs: progress and logs to stderr, partial text to stdout.
    A call waiting for a person's approval says so on stderr whatever else is shown (`--json`
    and `--quiet` included): where to answer and how long it waits."""

    def __init__(self, *, verbose: bool, quiet: bool, as_json: bool) -> None:
        self.verbose = verbose
        self.quiet = quiet
        self.as_json = as_json
        self.tty = sys.stderr.isatty()
        self._live = False
        self._progress: Any = None
        self._task: Any = None

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event.get("kind")
        if kind == "progress" and event.get("awaiting"):
            self._clear()
            sys.stderr.write(f"… {event.get('message') or 'waiting for approval'}\n")
            sys.stderr.flush()
            return
        if self.as_json or self.quiet:
            return
        if kind == "progress":
            self._on_progress(event.get("message"), event.get("fraction"))
        elif kind == "partial_text":
            self._clear()
            sys.stdout.write(str(event.get("text", "")))
            sys.stdout.flush()
        elif kind == "log":
            if self.verbose:
                self._clear()
                sys.stderr.write(f"  [{event.get('level', 'info')}] {event.get('message', '')}\n")
        elif kind == "artifact":
            self._clear()
            where = event.get("path") or event.get("name") or "(inline data)"
            sys.stderr.write(f"  artifact {event.get('mimeType', '')}: {where}\n")

    def _on_progress(self, message: Any, fraction: Any) -> None:
        text = str(message) if message else "working"
        if not self.tty:
            pct = f" {round(float(fraction) * 100)}%" if isinstance(fraction, int | float) else ""
            sys.stderr.write(f"… {text}{pct}\n")
            return
        if self._progress is None:
            # rich only when there is a live display to draw: it is not free to import.
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                TimeElapsedColumn(), transient=True, console=_stderr_console(),
            )  # fmt: skip
            self._progress.start()
            self._task = self._progress.add_task(text, total=1.0)
        total_known = isinstance(fraction, int | float)
        self._progress.update(
            self._task, description=text, completed=float(fraction) if total_known else None
        )
        self._live = True

    def _clear(self) -> None:
        if self._live and self._progress is not None:
            self._progress.stop()
            self._progress = None
            self._live = False

    def close(self) -> None:
        self._clear()


def _stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


def utc_time(ms: int | float | None) -> str:
    """Epoch milliseconds as `YYYY-MM-DD HH:MM:SS` (UTC); `-` for none."""
    if not ms:
        return "-"
    return datetime.fromtimestamp(float(ms) / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


#: C0 and C1 control characters and DEL, as a table shows them: a cell may hold what a peer
#: chose (a directory it says it works in, a command line it started), and a terminal acts on
#: the escape sequences such text can carry.
_CONTROLS: Final = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)]}


def printable(text: str) -> str:
    """`text` with every control character written as `\\xNN`."""
    return text.translate(_CONTROLS)


def table(rows: list[list[str]], header: list[str]) -> None:
    """Print `rows` under `header` in left-aligned columns (control characters escaped)."""
    rows = [[printable(str(c)) for c in row] for row in rows]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        sys.stdout.write(
            "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n"
        )
