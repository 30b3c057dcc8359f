"""The MCP stdio transport on the event loop's own pipe transports: no worker threads.

The SDK's `stdio_server` reads and writes through anyio's file wrappers, so every line in and
out hops to a worker thread and back (six hops per `tools/call`, most of what a trivial call
costs the SDK). Every MCP client starts its server with pipes (or a socket pair) for stdin and
stdout; on those this transport reads and writes non-blocking from the event loop instead. On
anything else (a terminal, a file) the SDK's own transport serves: a terminal's descriptor is
shared with the shell, which must never find it left non-blocking.

As the SDK's transport does, while serving, fd 0 reads the null device and fd 1 writes to
stderr, so nothing else in the process (a stray print, a child process) can read from or write
into the MCP stream; both descriptors are restored on exit. Messages are parsed and written
exactly as the SDK's transport does.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import stat
from collections.abc import AsyncIterator
from typing import Any, Final

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

#: Longest line read from the client. The SDK's transport has no bound; a line past this one is
#: dropped with an error to the server (which answers a parse error) and the stream goes on.
MAX_LINE_BYTES: Final = 64 * 1024 * 1024

Streams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]


def _is_pipe_or_socket(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@contextlib.asynccontextmanager
async def stdio_streams() -> AsyncIterator[Any]:
    """`(read_stream, write_stream)` for `Server.run`, over this process's stdin and stdout."""
    if not (_is_pipe_or_socket(0) and _is_pipe_or_socket(1)):
        async with stdio_server() as streams:
            yield streams
        return
    async with _pipe_streams() as streams:
        yield streams


class _Output(asyncio.Protocol):
    """Flow control of the stdout pipe: `drain` waits while the client is not reading."""

    def __init__(self) -> None:
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False
        self.lost = False

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def drain(self) -> None:
        while self._paused and not self.lost:
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        if self.lost:
            raise anyio.BrokenResourceError("the MCP client closed its end of stdout")


@contextlib.asynccontextmanager
async def _pipe_streams() -> AsyncIterator[Streams]:
    loop = asyncio.get_running_loop()
    # The wire moves to private descriptors; fd 0 and 1 are diverted while we serve.
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES, loop=loop)
    output = _Output()
    in_transport: asyncio.BaseTransport | None = None
    out_transport: asyncio.WriteTransport | None = None
    try:
        in_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop),
            os.fdopen(wire_in, "rb", buffering=0, closefd=False),
        )
        out_transport, _ = await loop.connect_write_pipe(
            lambda: output, os.fdopen(wire_out, "wb", buffering=0, closefd=False)
        )
        to_server, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        server_writes, from_server = anyio.create_memory_object_stream[SessionMessage](0)
        transport = out_transport

        reading = anyio.CancelScope()

        async def read_lines() -> None:
            with reading:  # cancelled once the server is done, whether or not stdin ended
                async with to_server:
                    await _relay_lines(reader, to_server)

        async def write_lines() -> None:
            async with from_server:
                async for item in from_server:
                    json = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                    transport.write(json.encode("utf-8") + b"\n")
                    try:
                        await output.drain()
                    except anyio.BrokenResourceError:
                        return

        async with anyio.create_task_group() as tg:
            tg.start_soon(write_lines)
            tg.start_soon(read_lines)
            yield server_reads, server_writes
            reading.cancel()
            await server_writes.aclose()  # the writer delivers what is queued, then ends
    finally:
        for t in (in_transport, out_transport):
            if t is not None:
                t.close()
        # Give the wire back to fd 0 and 1, blocking again, as we found it.
        for fd, wire in ((0, wire_in), (1, wire_out)):
            with contextlib.suppress(OSError):
                os.set_blocking(wire, True)
                os.dup2(wire, fd)
            with contextlib.suppress(OSError):
                os.close(wire)


async def _relay_lines(
    reader: asyncio.StreamReader,
    to_server: MemoryObjectSendStream[SessionMessage | Exception],
) -> None:
    """Lines from the client to the server, parsed as the SDK's transport parses them."""
    while True:
        try:
            line = await reader.readline()
        except ValueError as exc:  # longer than MAX_LINE_BYTES: dropped
            await to_server.send(exc)
            continue
        if not line:
            return  # the client closed stdin
        if not line.strip():
            continue
        try:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except Exception as exc:
            await to_server.send(exc)
            continue
        await to_server.send(SessionMessage(message))
