"""The tools' result models (their field names are the wire shapes)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, RootModel


class TerminalSession(BaseModel):
    id: str
    cwd: str
    shell: str
    pid: int | None
    cols: int
    rows: int
    status: Literal["running", "exited"]
    createdAt: int
    exitCode: int | None
    signal: str | None
    #: The directory its writes are confined to by the kernel (None: not confined).
    confinedTo: str | None = None
    #: Handed to the local user (`detach`): it outlives the session that started it.
    detached: bool = False
    #: Who started it: the caller kind (`cli`: the local user) and its session.
    owner: str = "cli"
    ownerSession: str | None = None


class HostPort(BaseModel):
    port: int
    #: Whether the runtime opened it on the host's 127.0.0.1 for the confined server.
    forwarded: bool
    #: Why not, when it did not (meith's own port, taken on the host).
    reason: str | None = None


class WallRefusal(BaseModel):
    wall: str
    what: str
    #: The grant that would open it.
    open: str | None = None
    note: str | None = None


class Walls(BaseModel):
    """The walls around a confined process, and what they refused while it ran."""

    inForce: list[str]
    writable: list[str] = Field(description="Where it may write")
    network: list[str] = Field(description="The destinations its grant names (--net)")
    refused: list[WallRefusal]
    refusedMore: int = 0


class DevServerRecord(BaseModel):
    id: str
    name: str | None
    cwd: str
    command: str
    args: list[str]
    status: Literal["starting", "running", "exited", "errored", "stopped"]
    pid: int | None
    port: int | None
    exitCode: int | None
    signal: str | None
    startedAt: int
    #: The directory its writes are confined to by the kernel (None: not confined).
    confinedTo: str | None = None
    #: Handed to the local user (`detach`): it outlives the session that started it.
    detached: bool = False
    #: Who started it: the caller kind (`cli`: the local user) and its session.
    owner: str = "cli"
    ownerSession: str | None = None
    #: The ports asked for (named or announced) and whether the host's loopback has them.
    hostPorts: list[HostPort] = Field(default_factory=list)
    walls: Walls | None = None


class ProcessLogEntry(BaseModel):
    seq: int
    stream: Literal["stdout", "stderr", "pty", "system"]
    text: str
    ts: int


class ProcessNode(BaseModel):
    pid: int
    ppid: int | None
    command: str | None
    ports: list[int]
    # Typed loosely on purpose: tool schemas are self-contained (no $ref), so a recursive
    # model cannot be described; each child has this same shape.
    children: list[dict[str, Any]] = Field(description="Child ProcessNode objects")


class ManagedProcess(BaseModel):
    kind: Literal["dev-server", "terminal"]
    id: str
    pid: int | None
    cwd: str
    command: str | None
    status: str
    ports: list[int]
    tree: ProcessNode | None


class WriteResult(BaseModel):
    terminalId: str
    written: int


class CloseResult(BaseModel):
    terminalId: str
    closed: bool


class SnapshotResult(BaseModel):
    session: TerminalSession
    buffer: str
    nextSeq: int
    truncated: bool = Field(description="True when output before sinceSeq was already dropped")


class StopResult(BaseModel):
    devServerId: str
    stopped: bool


class ProcessTreeResult(BaseModel):
    processes: list[ManagedProcess]


class ProcessLogsResult(BaseModel):
    processId: str
    logs: list[ProcessLogEntry]


class AttachResult(BaseModel):
    devServerId: str
    attached: bool


class TerminalList(RootModel[list[TerminalSession]]):
    pass


class DevServerList(RootModel[list[DevServerRecord]]):
    pass


class RunCommandResult(BaseModel):
    exitCode: int | None = Field(description="The exit status; null when a signal ended it")
    signal: str | None = Field(description="The signal that ended it (SIGTERM, SIGKILL, ...)")
    timedOut: bool = Field(description="True when timeoutMs passed and meith ended it")
    stdout: str
    stderr: str
    truncated: bool = Field(description="True when the middle of stdout or stderr was elided")
    durationMs: int = Field(description="From start to exit, in milliseconds")
    #: The directory its writes are confined to by the kernel (None: not confined).
    confinedTo: str | None = None
    walls: Walls | None = None
