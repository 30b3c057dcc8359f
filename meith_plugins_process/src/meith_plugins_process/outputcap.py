"""One output stream of a command within a byte limit: its first and last halves kept, the
middle counted and marked where it was cut out."""

from __future__ import annotations


class OutputCap:
    """One stream's bytes within `limit`: the first half and the last half kept, the middle
    counted."""

    __slots__ = ("_head", "_head_max", "_tail", "_tail_max", "total")

    def __init__(self, limit: int) -> None:
        self._head_max = limit // 2
        self._tail_max = limit - self._head_max
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self._head_max - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail += data
            # Trimmed in bulk, not per chunk: the tail is at most twice its size meanwhile.
            if len(self._tail) > 2 * self._tail_max + 65536:
                del self._tail[: len(self._tail) - self._tail_max]

    def render(self) -> tuple[str, int]:
        """`(text, elided bytes)`: the kept bytes as UTF-8 (invalid bytes replaced), with a
        marker saying how many bytes are missing where the middle was cut out."""
        tail = bytes(self._tail[len(self._tail) - self._tail_max :]) if self._tail_max else b""
        head = bytes(self._head)
        if self.total == len(head) + len(tail):
            return (head + tail).decode("utf-8", "replace"), 0
        # A character cut in two at either edge goes to the elided middle, not to U+FFFD.
        head, tail = _whole_chars_head(head), _whole_chars_tail(tail)
        elided = self.total - len(head) - len(tail)
        marker = f"\n[... {elided} bytes elided ...]\n"
        return head.decode("utf-8", "replace") + marker + tail.decode("utf-8", "replace"), elided


def _whole_chars_head(data: bytes) -> bytes:
    """`data` without a UTF-8 sequence left incomplete at its end."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 == 0x80:
            continue  # a continuation byte: look further back for its lead
        if byte >= 0xC0:
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return data[:-back] if need > back else data
        return data
    return data


def _whole_chars_tail(data: bytes) -> bytes:
    """`data` without the continuation bytes of a sequence that began before it."""
    skip = 0
    while skip < min(3, len(data)) and data[skip] & 0xC0 == 0x80:
        skip += 1
    return data[skip:]
