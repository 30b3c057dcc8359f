"""Compact JSON for values the audit trail builds itself, through pydantic-core's encoder.

Audit records and redacted summaries hold only plain JSON values (str-keyed dicts, lists,
strings, ints, finite floats, booleans, None: the redactor has already turned everything else
into text), so the Rust encoder pydantic ships with writes the same JSON about three times
faster than the standard library's, once or twice per call. Whatever it refuses (a lone
surrogate, an integer too large for it) goes through `dumps_bytes` as before. The server side
only: the clients must not import pydantic.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import to_json

from meith_core.protocol.framing import dumps_bytes


def plain_json(value: Any) -> bytes:
    """`dumps_bytes(value)` for a value made only of plain JSON types (floats may be written
    in a different but equal form, e.g. `1.5e-7`)."""
    try:
        return to_json(value)
    except Exception:
        return dumps_bytes(value)
