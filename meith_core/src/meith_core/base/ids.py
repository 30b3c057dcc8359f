"""Identifiers: short `<prefix>_<12 hex>` record ids, and unguessable session ids."""

from __future__ import annotations

import os
import uuid


def new_id(prefix: str) -> str:
    """`req_a1b2c3d4e5f6`-style id: short, unique enough for records, not a secret."""
    return f"{prefix}_{os.urandom(6).hex()}"


def new_session_id(kind: str) -> str:
    """A full-entropy session id (`socket:<uuid4>`); it is a bearer of grants, so never shorten it."""
    return f"{kind}:{uuid.uuid4()}"
