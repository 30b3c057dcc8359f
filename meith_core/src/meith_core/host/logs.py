"""structlog for `meith serve`: console on a TTY, JSON otherwise, always JSON to logs.jsonl."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any, Literal, TextIO

import structlog

from meith_core.protocol.framing import dumps_bytes

LogFormat = Literal["console", "json"]
#: logs.jsonl is rotated (renamed to logs.jsonl.1) beyond this size.
MAX_LOG_FILE_BYTES = 10 * 1024 * 1024


class JsonlFileSink:
    """A structlog processor that appends each event as a JSON line to a 0600 file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = -1
        self._size = 0

    def _open(self) -> None:
        self._fd = os.open(
            self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600
        )
        self._size = os.fstat(self._fd).st_size

    def __call__(self, logger: Any, method: str, event: dict[str, Any]) -> dict[str, Any]:
        try:
            if self._fd < 0:
                self._open()
            if self._size > MAX_LOG_FILE_BYTES:
                os.close(self._fd)
                os.replace(self.path, self.path.with_name(self.path.name + ".1"))
                self._open()
            line = (
                dumps_bytes(
                    {
                        k: (v if isinstance(v, str | int | float | bool | type(None)) else repr(v))
                        for k, v in event.items()
                    }
                )
                + b"\n"
            )
            self._size += os.write(self._fd, line)
        except OSError:
            pass  # logging must never take the runtime down
        return event


def default_to_stderr() -> None:
    """When the embedding program has not configured structlog, keep its defaults but print to
    stderr: structlog's default is stdout, and a library must never write to its host's stdout
    (it may be a protocol stream)."""
    if not structlog.is_configured():
        structlog.configure(logger_factory=structlog.PrintLoggerFactory(file=sys.stderr))


def configure(
    log_format: LogFormat | None, logs_path: Path | None, *, stream: TextIO | None = None
) -> LogFormat:
    stream = stream or sys.stderr
    if log_format is None:
        log_format = "console" if stream.isatty() else "json"
    level_name = os.environ.get("MEITH_LOG_LEVEL", "info").upper()
    level = getattr(logging, level_name, logging.INFO)
    processors: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info,
    ]
    if logs_path is not None:
        processors.append(JsonlFileSink(logs_path))
    if log_format == "console":
        processors.append(
            structlog.dev.ConsoleRenderer(
                colors=stream.isatty(), exception_formatter=structlog.dev.plain_traceback
            )
        )
    else:
        processors.append(structlog.processors.JSONRenderer())
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=stream),
        cache_logger_on_first_use=True,
    )
    return log_format
