"""Bytes on disk to text and back: encodings, binary detection, line endings, hashes.

A file is text when its first bytes hold no NUL (after a UTF-16 byte-order mark, which makes
NULs normal) and it decodes; UTF-8 is tried first, Latin-1 last (it decodes anything, so a
legacy 8-bit file is still readable and written back byte for byte).
"""

from __future__ import annotations

import codecs
import hashlib
from dataclasses import dataclass
from typing import Final, Literal

#: Bytes looked at to call a file binary (git looks at the first 8000).
SNIFF_BYTES: Final = 8192

Encoding = Literal["utf-8", "utf-8-sig", "utf-16-le", "utf-16-be", "latin-1"]
LineEnding = Literal["lf", "crlf", "mixed", "none"]

_BOMS: Final[tuple[tuple[bytes, Encoding], ...]] = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


class BinaryFile(ValueError):
    """The file holds bytes that are not text."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def bom_encoding(head: bytes) -> Encoding | None:
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    return None


def looks_binary(head: bytes) -> bool:
    """True when the first bytes say binary: a NUL outside a UTF-16 file."""
    enc = bom_encoding(head)
    if enc in ("utf-16-le", "utf-16-be"):
        return False
    return b"\0" in head[:SNIFF_BYTES]


@dataclass(frozen=True, slots=True)
class Decoded:
    text: str
    encoding: Encoding


def decode(data: bytes) -> Decoded:
    """The text of a file's bytes, or BinaryFile."""
    if looks_binary(data[:SNIFF_BYTES]):
        raise BinaryFile("the file holds NUL bytes")
    enc = bom_encoding(data)
    if enc is not None:
        bom = {"utf-8-sig": codecs.BOM_UTF8}.get(enc, codecs.BOM_UTF16_LE)
        try:
            return Decoded(data[len(bom) :].decode(enc.replace("-sig", "")), enc)
        except UnicodeDecodeError:
            raise BinaryFile(f"the file starts with a {enc} mark but does not decode") from None
    try:
        return Decoded(data.decode("utf-8"), "utf-8")
    except UnicodeDecodeError:
        return Decoded(data.decode("latin-1"), "latin-1")


def encode(text: str, encoding: Encoding) -> bytes:
    """`text` in `encoding` (with its byte-order mark); UnicodeEncodeError when it cannot be."""
    if encoding == "utf-8-sig":
        return codecs.BOM_UTF8 + text.encode("utf-8")
    if encoding == "utf-16-le":
        return codecs.BOM_UTF16_LE + text.encode("utf-16-le")
    if encoding == "utf-16-be":
        return codecs.BOM_UTF16_BE + text.encode("utf-16-be")
    return text.encode(encoding)


def line_ending(text: str) -> LineEnding:
    crlf = text.count("\r\n")
    lf = text.count("\n")
    if lf == 0:
        return "none"
    if crlf == lf:
        return "crlf"
    return "lf" if crlf == 0 else "mixed"
