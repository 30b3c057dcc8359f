"""Bytes from a pipe -> complete text lines, in bulk.

Throughput matters here (a chatty dev server, several attached clients), so a chunk is decoded
once (incrementally: a UTF-8 sequence split across reads survives), CRLF is normalised once, and
the chunk is split with one `str.split`; nothing runs per line in Python.
"""

from __future__ import annotations

import codecs
from typing import Final

#: A "line" that never ends (a progress bar redrawn with bare \r, binary output) is cut into
#: pieces of this many characters so the carry, and each entry, stays bounded.
MAX_LINE_CHARS: Final = 16_384


class LineSplitter:
    """Feed chunks, get the complete lines they finish; `flush()` returns the partial rest."""

    __slots__ = ("_carry", "_decoder", "_max")

    def __init__(self, max_line_chars: int = MAX_LINE_CHARS) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._carry = ""
        self._max = max_line_chars

    def feed(self, data: bytes) -> list[str]:
        text = self._decoder.decode(data)
        if self._carry:
            text = self._carry + text
        if "\r" in text:
            # A CR at the very end stays in the carry until the next chunk says whether an LF
            # follows it, so CRLF split across reads is normalised too.
            text = text.replace("\r\n", "\n")
        lines = text.split("\n")
        carry = lines.pop()
        if lines and max(map(len, lines)) > self._max:
            lines = [piece for line in lines for piece in self._cut(line)]
        if len(carry) > self._max:
            cut = len(carry) - len(carry) % self._max
            lines.extend(carry[i : i + self._max] for i in range(0, cut, self._max))
            carry = carry[cut:]
        self._carry = carry
        return lines

    def _cut(self, line: str) -> list[str]:
        if len(line) <= self._max:
            return [line]
        return [line[i : i + self._max] for i in range(0, len(line), self._max)]

    def flush(self) -> list[str]:
        """The unterminated last line (the stream ended), if any."""
        text = self._carry + self._decoder.decode(b"", final=True)
        self._carry = ""
        if text.endswith("\r"):
            text = text[:-1]
        return [text] if text else []
