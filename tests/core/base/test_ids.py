"""Ids: a prefix and 12 hex digits; session ids carry a whole UUID."""

from __future__ import annotations

import re

from meith_core.base.ids import new_id, new_session_id


def test_ids_are_prefix_and_12_hex() -> None:
    ids = {new_id("req") for _ in range(1000)}
    assert len(ids) == 1000
    assert all(re.fullmatch(r"req_[0-9a-f]{12}", i) for i in ids)


def test_session_ids_carry_a_full_uuid() -> None:
    sid = new_session_id("cli")
    assert re.fullmatch(r"cli:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", sid)
