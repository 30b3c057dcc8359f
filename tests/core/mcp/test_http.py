"""Streamable HTTP's front: where it may bind."""

from __future__ import annotations

import pytest

from meith_core.mcp.http import is_loopback, parse_bind


@pytest.mark.parametrize(
    ("value", "expected"),
    [("8765", ("127.0.0.1", 8765)), ("0.0.0.0:1", ("0.0.0.0", 1)), ("[::1]:9", ("::1", 9))],
)
def test_http_bind_parsing(value: str, expected: tuple[str, int]) -> None:
    assert parse_bind(value) == expected


def test_loopback_detection() -> None:
    assert is_loopback("127.0.0.1")
    assert is_loopback("::1")
    assert is_loopback("localhost")
    assert not is_loopback("0.0.0.0")
    assert not is_loopback("192.168.1.2")
    with pytest.raises(ValueError, match="PORT"):
        parse_bind("host:port")
