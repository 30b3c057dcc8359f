"""Helpers shared by the git plugin tests."""

from __future__ import annotations

from typing import Any

from meith_core import Runtime


async def call_ok(rt: Runtime, name: str, args: dict[str, Any], **kw: Any) -> Any:
    """Call a tool and return its content, failing the test with the error otherwise."""
    res = await rt.call(name, args, **kw)
    assert res.ok, (name, res.error)
    return res.content


async def call_err(rt: Runtime, name: str, args: dict[str, Any], **kw: Any) -> tuple[str, str]:
    """Call a tool that must fail; returns (code, message)."""
    res = await rt.call(name, args, **kw)
    assert not res.ok, (name, res.content)
    assert res.error is not None
    return res.error.code.value, res.error.message
