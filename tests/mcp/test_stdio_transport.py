"""The bridge's stdio streams served by the event loop, in a real subprocess on real pipes: lines
in and out, nothing else in the process reaches the stream, and the descriptors are handed
back as they were; a terminal keeps the SDK's own transport."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

CHILD = """
import asyncio, os
from meith_core._mcp.stdio import loop_stdio

async def main():
    async with loop_stdio() as streams:
        if streams is None:
            print("not served by the loop", flush=True)
            return
        reader, writer = streams
        print("a stray print", flush=True)
        os.write(1, b"a stray write to fd 1\\n")
        async for line in reader:
            await writer.write(line.upper())
            await writer.flush()
    print("after:", os.get_blocking(0), os.get_blocking(1), flush=True)

asyncio.run(main())
"""


def test_lines_round_trip_and_stray_output_goes_to_stderr() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD],
        input=b'{"jsonrpc": "2.0"}\nsecond \xc3\xa9\nno newline at the end',
        capture_output=True,
        timeout=60,
        check=True,
    )
    assert proc.stdout.decode() == (
        '{"JSONRPC": "2.0"}\nSECOND É\nNO NEWLINE AT THE END' + "after: True True\n"
    )
    assert b"a stray print\n" in proc.stderr
    assert b"a stray write to fd 1\n" in proc.stderr


def test_a_terminal_is_left_to_the_sdk_transport() -> None:
    controller, terminal = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD],
            stdin=terminal,
            stdout=terminal,
            stderr=subprocess.PIPE,
            timeout=60,
            check=True,
        )
        screen = os.read(controller, 4096)
    finally:
        os.close(controller)
        os.close(terminal)
    assert b"not served by the loop" in screen
    assert proc.stderr == b""
