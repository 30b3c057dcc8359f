"""The MCP stream on stdin/stdout, read and written on the event loop.

The SDK's stdio transport goes through `anyio.wrap_file`: a worker-thread round trip for every
line read and two (write, flush) for every message sent, a dozen per tool call. When stdin and
stdout are pipes or sockets (how MCP clients start their servers), the bridge hands the SDK
streams served by the event loop instead. As the SDK does with its own, fd 0 reads the null
device and fd 1 writes to stderr while the bridge serves, so nothing else in the process (a
stray print, a child) reaches the MCP stream; both are restored on exit. Anything else (a
terminal, a file) takes the SDK's own path.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import AsyncIterator
from typing import Any

#: Longest line read from the client (the SDK's own reader has no limit).
MAX_LINE_BYTES = 64 * 1024 * 1024
#: How long the last queued output may take to reach a client that stopped reading.
CLOSE_TIMEOUT_S = 5.0


def loop_servable(fd: int) -> bool:
    """A pipe or a socket: the event loop can wait on it (a file or terminal cannot, or should
    not be switched to non-blocking under the user's shell)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class LineReader:
    """`async for line in reader`: the lines of stdin as text, like the SDK's wrapped file."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> LineReader:
        return self

    async def __anext__(self) -> str:
        try:
            line = await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            line = exc.partial
        except asyncio.LimitOverrunError as exc:
            # Too long to be a message we would take: skip it, as an unparsable line.
            await self._reader.readexactly(exc.consumed)
            return "\n"
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class LineWriter:
    """`await write(text)` / `await flush()` onto stdout, with the pipe's back-pressure."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


def _claim(fd: int, diversion: int) -> int:
    """A private duplicate of `fd` (above the standard range), with `fd` pointed at
    `diversion`."""
    import fcntl

    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    try:
        os.dup2(diversion, fd)
    except OSError:
        os.close(private)
        raise
    finally:
        os.close(diversion)
    return private


@contextlib.asynccontextmanager
async def loop_stdio() -> AsyncIterator[tuple[Any, Any] | None]:
    """(reader, writer) for the SDK's `stdio_server(stdin, stdout)`, or None when stdin and
    stdout cannot be served by the loop (then the SDK's own transport is the one to use)."""
    if not (loop_servable(0) and loop_servable(1)):
        yield None
        return
    loop = asyncio.get_running_loop()
    private_in = _claim(0, os.open(os.devnull, os.O_RDONLY))
    try:
        private_out = _claim(1, os.dup(2))
    except OSError:
        os.dup2(private_in, 0)
        os.close(private_in)
        yield None
        return
    write_transport: asyncio.WriteTransport | None = None
    read_transport: asyncio.ReadTransport | None = None
    try:
        reader = asyncio.StreamReader(limit=MAX_LINE_BYTES, loop=loop)
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop),
            os.fdopen(private_in, "rb", buffering=0, closefd=False),
        )
        # A StreamReaderProtocol (its reader unused) so the writer can wait until closed.
        write_transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader(loop=loop), loop=loop),
            os.fdopen(private_out, "wb", buffering=0, closefd=False),
        )
        writer = asyncio.StreamWriter(write_transport, protocol, None, loop)
        yield LineReader(reader), LineWriter(writer)
    finally:
        if write_transport is not None:
            # What is still queued goes out before the descriptor is handed back.
            write_transport.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(writer.wait_closed(), CLOSE_TIMEOUT_S)
        if read_transport is not None:
            read_transport.close()
        # The loop left the pipes non-blocking; the descriptions may be shared with whoever
        # started us, so they get back what they had.
        for private, fd in ((private_in, 0), (private_out, 1)):
            with contextlib.suppress(OSError):
                os.set_blocking(private, True)
            with contextlib.suppress(OSError):
                os.dup2(private, fd)
            with contextlib.suppress(OSError):
                os.close(private)
