"""The tools' argument models (their field names are the wire shapes; results: `outputs`)."""

from __future__ import annotations

import re
import shlex
import signal
from typing import Annotated, Final

from pydantic import Field, field_validator, model_validator

from meith_core import PatternError, ToolArgs, compile_pattern
from meith_plugins_process.killer import parse_signal

_ID = Annotated[str, Field(min_length=1, max_length=200)]
#: A command in either form: a command line, or the program and its arguments.
_LINE = Annotated[str, Field(min_length=1)]
_ARGV = Annotated[list[str], Field(min_length=1)]
_DIM = Annotated[int, Field(ge=1, le=10_000)]
_TERMINAL_ID = Annotated[
    str, Field(min_length=1, max_length=200, description="A terminal id (term_…)")
]
#: How long a stopped process group gets to exit before SIGKILL (the tool's default when None).
_GRACE_MS = Annotated[
    int | None,
    Field(
        None,
        ge=0,
        le=20_000,
        description="Milliseconds to wait after the signal before SIGKILL (default 3000)",
    ),
]
_DEV_SERVER_ID = Annotated[
    str, Field(min_length=1, max_length=200, description="A dev server id (dev_…)")
]
_ENV = Annotated[
    dict[str, str] | None,
    Field(default=None, description="Extra environment variables for the process"),
]
_DETACH = Annotated[
    bool,
    Field(
        default=False,
        description="Hand it to the local user: it keeps running after this session ends "
        "(otherwise it is stopped then)",
    ),
]


def _check_signal(value: str | None) -> str | None:
    if value is not None:
        parse_signal(value, default=signal.SIGTERM)
    return value


def _check_env(value: dict[str, str] | None) -> dict[str, str] | None:
    for key, item in (value or {}).items():
        if not key or "=" in key or "\0" in key or "\0" in item:
            raise ValueError(f"invalid environment variable {key!r}")
    return value


# -- inputs ---------------------------------------------------------------------------------


class EmptyArgs(ToolArgs):
    pass


class CreateTerminalArgs(ToolArgs):
    cwd: str | None = Field(None, description="Working directory (default: the caller's)")
    shell: str | None = Field(
        None, description="Shell to run (default: $SHELL, /bin/bash, /bin/sh)"
    )
    cols: _DIM = Field(80, description="Terminal width in columns")
    rows: _DIM = Field(24, description="Terminal height in rows")
    env: _ENV
    detach: _DETACH

    _env = field_validator("env")(_check_env)


class TerminalIdArgs(ToolArgs):
    terminalId: _TERMINAL_ID


class WriteTerminalArgs(ToolArgs):
    terminalId: _TERMINAL_ID
    data: str = Field(max_length=1_000_000, description="Raw input; include \\r to submit a line")


class ResizeTerminalArgs(ToolArgs):
    terminalId: _TERMINAL_ID
    cols: _DIM = Field(description="New width in columns")
    rows: _DIM = Field(description="New height in rows")


class KillTerminalArgs(ToolArgs):
    terminalId: _TERMINAL_ID
    signal: str | None = Field(
        None, description="Signal name (default SIGHUP), e.g. SIGTERM, SIGINT"
    )
    graceMs: _GRACE_MS

    _signal = field_validator("signal")(_check_signal)


class SnapshotArgs(ToolArgs):
    terminalId: _TERMINAL_ID
    sinceSeq: int | None = Field(
        None, ge=0, description="Only output from this sequence number on (a previous nextSeq)"
    )


_PORTS = Annotated[
    list[Annotated[int, Field(ge=1, le=65535)]],
    Field(
        default_factory=list,
        max_length=16,
        description="Ports it serves on, opened on the host's 127.0.0.1 when it runs confined "
        "in a network namespace of its own (the port it announces is opened too; meith's own "
        "ports never are)",
    ),
]


class StartDevServerArgs(ToolArgs):
    cwd: str = Field(min_length=1, description="Directory to run the command in")
    command: _LINE | _ARGV = Field(
        description="A command line run through /bin/sh -c (a string alone), or the program "
        "and its arguments run without a shell (a list, or a string with args)",
    )
    args: list[str] = Field(default_factory=list, description="Arguments; given, no shell is used")
    name: str | None = Field(None, max_length=200, description="A name to show for the server")
    env: _ENV
    detach: _DETACH
    ports: _PORTS

    _env = field_validator("env")(_check_env)

    @field_validator("command")
    @classmethod
    def _program(cls, value: str | list[str]) -> str | list[str]:
        if isinstance(value, list) and not value[0]:
            raise ValueError("command[0], the program, must not be empty")
        return value

    @property
    def program(self) -> tuple[str, list[str]]:
        """`(command, args)`: a list is its program and arguments (a program alone is run
        through the shell quoted, as a command line of one word)."""
        if isinstance(self.command, str):
            return self.command, list(self.args)
        first, *rest = self.command
        rest += self.args
        return (first if rest else shlex.quote(first)), rest


class StopDevServerArgs(ToolArgs):
    devServerId: _DEV_SERVER_ID
    signal: str | None = Field(None, description="Signal name (default SIGTERM)")
    graceMs: _GRACE_MS

    _signal = field_validator("signal")(_check_signal)


class ProcessLogsArgs(ToolArgs):
    processId: _ID = Field(description="A dev server (dev_…) or terminal (term_…) id")
    limit: int | None = Field(None, ge=1, le=10_000, description="Only the newest N entries")
    sinceSeq: int | None = Field(None, ge=0, description="Only entries from this seq on")


class AttachLogsArgs(ToolArgs):
    devServerId: str | None = Field(None, min_length=1, description="A dev server id (dev_…)")
    cwd: str | None = Field(
        None, description="Attach to the newest dev server started in this directory"
    )
    replay: bool = Field(True, description="Send the buffered lines first")

    @model_validator(mode="after")
    def _one_target(self) -> AttachLogsArgs:
        if not self.devServerId and not self.cwd:
            raise ValueError("Provide either devServerId or cwd")
        return self


class WaitForDevServerArgs(ToolArgs):
    devServerId: _DEV_SERVER_ID
    port: int | None = Field(
        None,
        ge=1,
        le=65535,
        description="Wait for this port (default: the port the server announced)",
    )
    logPattern: str | None = Field(
        None,
        min_length=1,
        max_length=1000,
        description="Wait for a log line matching this regular expression (RE2 syntax: no "
        "backreferences or lookaround; matching takes linear time)",
    )
    url: str | None = Field(
        None, description="Wait until this http(s) URL answers with a status below 500"
    )
    timeoutMs: int = Field(60_000, ge=1, le=600_000, description="How long to wait, in ms")

    @field_validator("logPattern")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                compile_pattern(value)
            except PatternError as exc:
                raise ValueError(str(exc)) from None
        return value

    @field_validator("url")
    @classmethod
    def _http(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^/\s]+", value):
            raise ValueError("url must be an http:// or https:// URL")
        return value


#: run_command: how long a command may run, and how much of each stream is kept.
RUN_TIMEOUT_DEFAULT_MS: Final = 120_000
RUN_TIMEOUT_MAX_MS: Final = 30 * 60 * 1000
#: The answer carries each stream twice (structured, and in the text for a model): two
#: streams at this cap still fit one 8 MiB result frame, with room for JSON escapes.
RUN_OUTPUT_MAX_BYTES: Final = 1024 * 1024
RUN_OUTPUT_DEFAULT_BYTES: Final = RUN_OUTPUT_MAX_BYTES
RUN_STDIN_MAX_CHARS: Final = 4 * 1024 * 1024


class RunCommandArgs(ToolArgs):
    cwd: str | None = Field(
        None, min_length=1, description="Directory to run in (default: the caller's)"
    )
    command: _ARGV | _LINE | None = Field(
        None,
        description="The program and its arguments as a list, run without a shell (no "
        "expansion, no quoting); or a command line as a string, run through /bin/sh -c like "
        "`shell`. Give this or `shell`",
    )
    shell: str | None = Field(
        None,
        min_length=1,
        description="A command line run through /bin/sh -c (pipes, &&, globs); give this or "
        "`command`",
    )
    env: _ENV
    stdin: str | None = Field(
        None,
        max_length=RUN_STDIN_MAX_CHARS,
        description="Text written to the command's standard input (default: none, /dev/null)",
        json_schema_extra={"sensitive": True},
    )
    timeoutMs: int = Field(
        RUN_TIMEOUT_DEFAULT_MS,
        ge=1,
        le=RUN_TIMEOUT_MAX_MS,
        description="Milliseconds before its processes get SIGTERM, then SIGKILL (default "
        "120000, at most 1800000)",
    )
    maxOutputBytes: int = Field(
        RUN_OUTPUT_DEFAULT_BYTES,
        ge=1,
        le=RUN_OUTPUT_MAX_BYTES,
        description="Bytes kept of each of stdout and stderr: the first and the last half; the "
        "middle is elided with a count (default and most: 1048576)",
    )

    _env = field_validator("env")(_check_env)

    @field_validator("command")
    @classmethod
    def _argv(cls, value: list[str] | str | None) -> list[str] | str | None:
        if isinstance(value, str):
            if "\0" in value:
                raise ValueError("command must not contain NUL characters")
        elif value is not None:
            if not value[0]:
                raise ValueError("command[0], the program, must not be empty")
            if any("\0" in part for part in value):
                raise ValueError("command must not contain NUL characters")
        return value

    @field_validator("shell")
    @classmethod
    def _line(cls, value: str | None) -> str | None:
        if value is not None and "\0" in value:
            raise ValueError("shell must not contain NUL characters")
        return value

    @model_validator(mode="after")
    def _one_form(self) -> RunCommandArgs:
        if isinstance(self.command, str) and self.shell is None:
            # A command line given as `command`: it is a `shell` line.
            self.shell, self.command = self.command, None
        if (self.command is None) == (self.shell is None):
            raise ValueError(
                "Give exactly one of command (a list run without a shell, or a command line) "
                "or shell (a command line for /bin/sh -c)"
                + ("; both were given" if self.command is not None else "; neither was given")
            )
        return self
