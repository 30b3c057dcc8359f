"""Fixtures for the server, client and CLI tests: an in-process server and the probe plugin."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import struct
import tempfile
import termios
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from meith_core import MeithHome, Runtime
from meith_core.protocol.framing import Frame, FrameError, NdjsonFramer, encode_frame
from meith_core.serve.socket_server import SocketServer
from meith_core.serve.socketbind import bind_socket
from tests.server.probe_plugin import ProbePlugin, install_probe


def short_socket_path() -> Path:
    return Path(tempfile.mkdtemp(prefix="ms-", dir="/tmp")) / "s.sock"


class RawConnection:
    """A protocol-level peer: raw frames out, decoded frames in."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.framer = NdjsonFramer()
        self.frames: list[dict[str, Any]] = []

    @classmethod
    async def open(cls, path: str | Path) -> RawConnection:
        reader, writer = await asyncio.open_unix_connection(str(path), limit=1 << 24)
        return cls(reader, writer)

    async def send(self, frame: dict[str, Any] | bytes) -> None:
        self.writer.write(frame if isinstance(frame, bytes) else encode_frame(frame))
        await self.writer.drain()

    async def call(
        self, request_id: str, tool: str, arguments: dict[str, Any] | None = None, **extra: Any
    ) -> None:
        await self.send(
            {
                "type": "tool_call",
                "requestId": request_id,
                "toolName": tool,
                "arguments": arguments or {},
                **extra,
            }
        )

    async def next(self, timeout: float = 10.0) -> dict[str, Any]:
        while not self.frames:
            data = await asyncio.wait_for(self.reader.read(1 << 16), timeout)
            if not data:
                raise EOFError("connection closed by the server")
            for event in self.framer.feed(data):
                assert not isinstance(event, FrameError), event
                assert isinstance(event, Frame)
                self.frames.append(event.message)
        return self.frames.pop(0)

    async def until(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 10.0
    ) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            frame = await self.next(max(0.01, deadline - loop.time()))
            if predicate(frame):
                return frame

    async def result(self, request_id: str, timeout: float = 10.0) -> dict[str, Any]:
        frame = await self.until(
            lambda f: f.get("type") == "tool_result" and f.get("requestId") == request_id, timeout
        )
        return frame["result"]  # type: ignore[no-any-return]

    def unread(self) -> int:
        """Bytes sent that the server has not read yet: still in this side's buffer, or queued in
        the socket (`TIOCOUTQ` counts what the peer has not consumed)."""
        sock = self.writer.get_extra_info("socket")
        (queued,) = struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0" * 4))
        return self.writer.transport.get_write_buffer_size() + int(queued)

    async def closed_by_server(self, timeout: float = 10.0) -> bool:
        try:
            while True:
                data = await asyncio.wait_for(self.reader.read(1 << 16), timeout)
                if not data:
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionResetError, BrokenPipeError):
            pass


async def until(predicate: Callable[[], Any], what: str = "the condition") -> None:
    """Poll `predicate` on the event loop (the in-process server runs there too) until true."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while not predicate():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


class Served:
    def __init__(self, runtime: Runtime, server: SocketServer, probe_dir: Path) -> None:
        self.runtime = runtime
        self.server = server
        self.socket = server.socket_path
        self.probe_dir = probe_dir

    async def connect(self) -> RawConnection:
        return await RawConnection.open(self.socket)

    def marks(self, name: str) -> list[str]:
        path = self.probe_dir / name
        return path.read_text().split() if path.exists() else []

    def audit(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.runtime.home.audit_path.read_text().splitlines()]


@pytest.fixture
def probe_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "probe"
    directory.mkdir()
    monkeypatch.setenv("PROBE_DIR", str(directory))
    return directory


@pytest.fixture
def server_options() -> dict[str, Any]:
    """Override in a test module to tune the SocketServer (outbound bound, frame timeout)."""
    return {}


@pytest.fixture
async def served(
    meith_home: MeithHome, probe_dir: Path, server_options: dict[str, Any]
) -> AsyncIterator[Served]:
    runtime = Runtime(meith_home, load_plugins=False, cwd=os.getcwd())
    runtime.load_plugin("probe", ProbePlugin)
    runtime.approve_plugin("probe")
    await runtime.start()
    bound = bind_socket(short_socket_path(), create_dir=False)
    # The clients of these tests live in the runtime's own process.
    server = SocketServer(runtime, bound, admit_own_process=True, **server_options)
    runtime.socket_path = server.socket_path
    runtime.server = server
    await server.start()
    try:
        yield Served(runtime, server, probe_dir)
    finally:
        await server.shutdown()
        await runtime.aclose()
        bound.release()


@pytest.fixture
def probe_env(tmp_path: Path, probe_dir: Path) -> dict[str, str]:
    """Env for a real `meith serve` that discovers the probe plugin through an entry point."""
    site = install_probe(tmp_path / "probe-site")
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "PROBE_DIR": str(probe_dir)}


@pytest.fixture
def probe_server(meith_server: Callable[..., Any], probe_env: dict[str, str]) -> Callable[..., Any]:
    """`probe_server(**kwargs)`: a real `meith serve` with the probe plugin, approved."""

    def start(**kwargs: Any) -> Any:
        env = {**probe_env, **kwargs.pop("env", {})}
        srv = meith_server(env=env, **kwargs)
        srv.cli_env.update(probe_env)
        srv.approve("probe")
        return srv

    return start
