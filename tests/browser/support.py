"""Test helpers: the local site the browser tests load, a PNG reader, the browser gate."""

from __future__ import annotations

import glob
import os
import struct
import threading
import time
import zlib
from collections.abc import Callable
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest

from meith_plugins_browser.executable import BrowserNotFoundError, FoundBrowser, find_browser

PAGES = Path(__file__).parent / "pages"
REQUIRE_ENV = "MEITH_REQUIRE_BROWSER"


def make_png(width: int, height: int, rgba: tuple[int, int, int, int]) -> bytes:
    """A solid-colour RGBA PNG."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    row = b"\x00" + bytes(rgba) * width
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


PIXEL = make_png(1, 1, (0, 0, 255, 255))


class _Handler(SimpleHTTPRequestHandler):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, directory=str(PAGES), **kwargs)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(
        self, status: int, body: bytes, ctype: str, extra: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path.startswith("/status/"):
            code = int(path.rsplit("/", 1)[1])
            self._send(code, f"status {code}".encode(), "text/plain")
        elif path == "/download":
            self._send(
                200,
                b"secret report\n",
                "application/octet-stream",
                {"Content-Disposition": 'attachment; filename="report.txt"'},
            )
        elif path == "/pixel.png":
            self._send(200, PIXEL, "image/png")
        elif path == "/favicon.ico":
            self._send(204, b"", "image/x-icon")
        elif path == "/":
            self._send(302, b"", "text/plain", {"Location": "/index.html"})
        else:
            super().do_GET()


class Site:
    """A threaded HTTP server on 127.0.0.1 serving tests/browser/pages."""

    def __init__(self) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str = "/index.html") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _playwright_chromium_guess() -> str | None:
    """Playwright's own Chromium, found without starting its driver (good enough for a gate)."""
    root = os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or os.path.expanduser(
        "~/.cache/ms-playwright"
    )
    for pattern in (
        "chromium-*/chrome-linux*/chrome",
        "chromium-*/chrome-mac*/Chromium.app/Contents/MacOS/Chromium",
    ):
        hits = sorted(glob.glob(os.path.join(root, pattern)))
        if hits:
            return hits[-1]
    return None


def require_browser() -> FoundBrowser:
    """The browser the tests will use; skip without one, or fail when CI demands one."""
    try:
        return find_browser(playwright_path=_playwright_chromium_guess())
    except BrowserNotFoundError as exc:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but no browser is available: {exc}", pytrace=False)
        pytest.skip(f"no Chromium available: {exc}")


def wait_for(predicate: Callable[[], Any], *, timeout: float = 20.0, interval: float = 0.05) -> Any:
    """Poll until `predicate()` is truthy; its value, or AssertionError at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)


# -- PNG -----------------------------------------------------------------------------------


def decode_png(data: bytes, rows_wanted: int | None = None) -> tuple[int, int, int, list[bytes]]:
    """(width, height, channels, rows) of an 8-bit RGB/RGBA PNG; checks every chunk's CRC and
    the size of the pixel data, and unfilters the first `rows_wanted` rows (all by default)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG signature"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"bad CRC in {kind!r}"
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        pos += 12 + length
    assert header is not None, "no IHDR"
    width, height, depth, color_type, _c, _f, interlace = header
    assert (depth, interlace) == (8, 0), header
    assert color_type in (2, 6), header
    channels = 4 if color_type == 6 else 3
    raw = zlib.decompress(idat)
    stride = width * channels
    assert len(raw) == height * (stride + 1), "pixel data does not match the size"
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height if rows_wanted is None else min(rows_wanted, height)):
        filt = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if filt == 1:
                line[i] = (line[i] + a) & 0xFF
            elif filt == 2:
                line[i] = (line[i] + b) & 0xFF
            elif filt == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif filt == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, channels, rows


def pixel(rows: list[bytes], channels: int, x: int, y: int) -> tuple[int, int, int]:
    row = rows[y]
    return row[x * channels], row[x * channels + 1], row[x * channels + 2]


def owned(details: dict[str, object]) -> dict[str, object]:
    """The tab and owner an ownership denial names (it says what to do instead, too)."""
    assert details["gate"] == "ownership"
    return {"tabId": details["tabId"], "ownerId": details["ownerId"]}


async def poll(predicate, timeout: float = 20.0):  # type: ignore[no-untyped-def]
    """Await `predicate()` (async) until truthy."""
    with anyio.fail_after(timeout):
        while True:
            value = await predicate()
            if value:
                return value
            await anyio.sleep(0.05)
