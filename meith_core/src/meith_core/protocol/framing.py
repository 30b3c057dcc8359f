"""Sans-IO NDJSON framing: bytes in, frames or frame errors out. No sockets here.

Standard library only, shared by the server, both clients and the fuzz tests. Every hostile
input yields a `FrameError`; nothing escapes `feed()` or `close()` as an exception.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, NamedTuple

from meith_core.protocol.constants import MAX_FRAME_BYTES, MAX_JSON_DEPTH, PROTOCOL_VERSION


class Frame(NamedTuple):
    """One complete, well-formed frame: a JSON object."""

    message: dict[str, Any]


class FrameError(NamedTuple):
    """A frame that was dropped, and why. The connection goes on."""

    reason: str


FrameEvent = Frame | FrameError

_JSON_SPACE = b" \t\r"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {key!r}")
            seen.add(key)
    return obj


_decoder = json.JSONDecoder(object_pairs_hook=_unique_pairs, parse_constant=_reject_constant)


def _deeper_than(value: Any, limit: int) -> bool:
    # Iterative on purpose: the value may be as deep as the recursion limit allows.
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        for child in children:
            if isinstance(child, dict | list):
                stack.append((child, depth + 1))
    return False


_plain_decoder = json.JSONDecoder()


def decode_frame(
    line: bytes,
    *,
    max_frame_bytes: int = MAX_FRAME_BYTES,
    max_depth: int = MAX_JSON_DEPTH,
    strict: bool = True,
) -> FrameEvent | None:
    """Decode one line (without its newline). None for a blank line.

    `strict` (the server, facing untrusted peers) also refuses duplicate keys, NaN/Infinity
    and nesting deeper than `max_depth`. Clients decode a runtime they verified, whose frames
    meith's own encoder wrote, with strict=False: the checks cost a Python call per object
    (several times the plain C decoder on a large result). Size, UTF-8, object type and the
    recursion guard apply either way."""
    line = line.strip(_JSON_SPACE)
    if not line:
        return None
    if len(line) > max_frame_bytes:
        return FrameError(f"frame of {len(line)} bytes exceeds MAX_FRAME_BYTES ({max_frame_bytes})")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return FrameError(f"frame is not valid UTF-8 ({exc.reason} at byte {exc.start})")
    try:
        value, end = (_decoder if strict else _plain_decoder).raw_decode(text)
    except RecursionError:
        return FrameError(f"frame nests deeper than {max_depth} levels")
    except ValueError as exc:
        return FrameError(f"malformed JSON frame: {exc}")
    if end != len(text):
        return FrameError(f"malformed JSON frame: extra data at char {end}")
    if not isinstance(value, dict):
        return FrameError(f"frame must be a JSON object, not {type(value).__name__}")
    # Counting brackets is C-speed; only a frame with enough of them can be too deep.
    if (
        strict
        and line.count(b"[") + line.count(b"{") > max_depth
        and _deeper_than(value, max_depth)
    ):
        return FrameError(f"frame nests deeper than {max_depth} levels")
    return Frame(value)


class NdjsonFramer:
    """Feed bytes in any chunking; get frames and frame errors in order.

    A frame longer than `max_frame_bytes` yields one error and everything up to the next
    newline is discarded, so the tail of an oversized frame is never parsed as a new frame.
    """

    __slots__ = ("_buf", "_discarding", "_max", "_max_depth", "_scanned", "_strict")

    def __init__(
        self,
        *,
        max_frame_bytes: int = MAX_FRAME_BYTES,
        max_depth: int = MAX_JSON_DEPTH,
        strict: bool = True,
    ) -> None:
        self._strict = strict
        self._buf = bytearray()
        self._scanned = 0  # prefix of _buf known to hold no newline: keeps feeding O(n)
        self._discarding = False
        self._max = max_frame_bytes
        self._max_depth = max_depth

    @property
    def pending_bytes(self) -> int:
        """Bytes of an incomplete frame held (or being discarded) right now."""
        return len(self._buf) + (1 if self._discarding else 0)

    def feed(self, data: bytes) -> list[FrameEvent]:
        out: list[FrameEvent] = []
        if self._discarding:
            newline = data.find(b"\n")
            if newline < 0:
                return out
            data = data[newline + 1 :]
            self._discarding = False
        buf = self._buf
        buf += data
        start = 0
        pos = buf.find(b"\n", self._scanned)
        while pos >= 0:
            if pos - start > self._max:
                out.append(self._oversize(pos - start))
            else:
                event = decode_frame(
                    bytes(buf[start:pos]),
                    max_frame_bytes=self._max,
                    max_depth=self._max_depth,
                    strict=self._strict,
                )
                if event is not None:
                    out.append(event)
            start = pos + 1
            pos = buf.find(b"\n", start)
        if start:
            del buf[:start]
        self._scanned = len(buf)
        if len(buf) > self._max:
            out.append(self._oversize(len(buf), unterminated=True))
            buf.clear()
            self._scanned = 0
            self._discarding = True
        return out

    def close(self) -> list[FrameEvent]:
        """End of input: an unterminated last frame is reported, never executed."""
        pending = bytes(self._buf).strip(_JSON_SPACE)
        self._buf.clear()
        self._scanned = 0
        discarding, self._discarding = self._discarding, False
        if pending or discarding:
            return [FrameError("connection closed inside an unterminated frame; it was dropped")]
        return []

    def _oversize(self, size: int, *, unterminated: bool = False) -> FrameError:
        what = "without a newline" if unterminated else "in one line"
        return FrameError(
            f"frame exceeds MAX_FRAME_BYTES ({self._max}) {what} ({size} bytes); "
            "it was discarded up to the next newline"
        )


def _mapping(value: Any) -> Any:
    # Read-only mappings (`ctx.settings` sections are MappingProxyType) are JSON objects too.
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# Built once: json.dumps with non-default options constructs an encoder on every call, and
# this runs several times per tool call. Encoders keep no state between calls.
# check_circular=False: tracking every container costs about a quarter of the time on large
# results; a cycle still fails, as RecursionError at the recursion limit.
_COMPACT = json.JSONEncoder(
    separators=(",", ":"),
    ensure_ascii=False,
    allow_nan=False,
    default=_mapping,
    check_circular=False,
)
_COMPACT_ASCII = json.JSONEncoder(
    separators=(",", ":"), allow_nan=False, default=_mapping, check_circular=False
)


def dumps(value: Any) -> str:
    """Compact JSON text as meith writes it (see `dumps_bytes`)."""
    return _COMPACT.encode(value)


def dumps_bytes(value: Any) -> bytes:
    """Compact UTF-8 JSON as meith writes it. Lone surrogates (undecodable file names) fall
    back to `\\u` escapes instead of failing to encode. Raises ValueError/TypeError for values
    that are not JSON (NaN, cycles, objects)."""
    # The ASCII encoder is about twice as fast on large strings, and for a value whose
    # strings are all printable ASCII it writes the very bytes the UTF-8 one does (both escape
    # control characters alike; DEL, 0x7f, only the ASCII one escapes). Asking each string is
    # cheap (`str.isascii` is O(1), the DEL search a memchr), so a small tree (a file read, a
    # diff, a log: few nodes, large strings) is checked whole; a larger one, or one with
    # non-ASCII text or a DEL, takes the UTF-8 encoder, which keeps such text at its UTF-8 size.
    if _ascii_strings(value, _ASCII_CHECK_NODES):
        return _COMPACT_ASCII.encode(value).encode("ascii")
    text = _COMPACT.encode(value)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _COMPACT_ASCII.encode(value).encode("ascii")


#: How many nodes of a value `dumps_bytes` looks at before it stops asking (see there).
_ASCII_CHECK_NODES: Final = 64


def _ascii_strings(value: Any, budget: int) -> bool:
    """Whether every string (and key) of `value` is ASCII without a DEL (which only the ASCII
    encoder escapes), found within `budget` nodes; False when the budget runs out first."""
    stack = [value]
    while stack:
        budget -= 1
        if budget < 0:
            return False
        item = stack.pop()
        if isinstance(item, str):
            if not item.isascii() or "\x7f" in item:
                return False
        elif isinstance(item, dict):
            for key, child in item.items():
                if not (isinstance(key, str) and key.isascii()) or "\x7f" in key:
                    return False
                stack.append(child)
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return True


def encode_frame(message: Mapping[str, Any]) -> bytes:
    """One NDJSON line; stamps `protocol` when the message has none (never overrides one)."""
    if message.get("protocol") is None:
        message = {**message, "protocol": PROTOCOL_VERSION}
    return dumps_bytes(message) + b"\n"
