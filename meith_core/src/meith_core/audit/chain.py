"""The hash chain of the audit trail: how a record is sealed and how a line is checked.

A sealed line is the record's compact JSON with `prev` (the previous record's hash, or null
for the first record of a chain) inside it, then `"hash"` as the last member:

    {...,"prev":"<64 hex>|null","hash":"<sha256 of the bytes of {...,"prev":...}>"}

The hash covers the exact bytes written (the line up to `,"hash":` closed with `}`), so checking
needs no canonical re-serialisation of parsed JSON; the suffix has a fixed length.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Final

from meith_core.audit.plainjson import plain_json

_HASH_KEY: Final = b',"hash":"'
#: `,"hash":"` + 64 hex digits + `"}`.
_SUFFIX_LEN: Final = len(_HASH_KEY) + 64 + 2
_HEX: Final = frozenset(b"0123456789abcdef")


def seal(record: dict[str, Any], prev: str | None) -> tuple[bytes, str]:
    """The line to append (with its newline) and its hash. `record` must not hold prev/hash."""
    if "hash" in record:
        record = {k: v for k, v in record.items() if k != "hash"}
    body = plain_json({**record, "prev": prev})
    digest = hashlib.sha256(body).hexdigest()
    return body[:-1] + _HASH_KEY + digest.encode("ascii") + b'"}\n', digest


@dataclass(frozen=True, slots=True)
class Checked:
    """One line of the trail as the verifier sees it."""

    record: dict[str, Any] | None  # None: not a JSON object (torn or foreign)
    hash: str | None  # the line's own hash when it is sealed and the hash matches
    prev: str | None
    sealed: bool  # carries a hash member at all
    error: str | None  # why a sealed line does not check out


def check_line(line: bytes) -> Checked:
    """Parse and check one line (without its newline)."""
    try:
        record = json.loads(line)
    except ValueError:
        return Checked(None, None, None, False, "not a whole JSON record")
    if not isinstance(record, dict):
        return Checked(None, None, None, False, "not a JSON object")
    claimed = record.get("hash")
    if claimed is None:
        return Checked(record, None, None, False, None)
    prev = record.get("prev")
    if not isinstance(prev, str | None):
        return Checked(record, None, None, True, "prev is not a hash")
    tail = line[-_SUFFIX_LEN:]
    digest = tail[len(_HASH_KEY) : len(_HASH_KEY) + 64]
    if (
        len(line) <= _SUFFIX_LEN
        or not tail.startswith(_HASH_KEY)
        or not tail.endswith(b'"}')
        or not set(digest) <= _HEX
        or digest.decode("ascii") != claimed
    ):
        return Checked(record, None, prev, True, "hash is not the last member of the record")
    if hashlib.sha256(line[:-_SUFFIX_LEN] + b"}").hexdigest() != claimed:
        return Checked(record, None, prev, True, "hash does not match the record (edited)")
    return Checked(record, claimed, prev, True, None)
