"""Helpers shared by the git plugin tests."""

from __future__ import annotations

import os
from typing import Any

import anyio

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


async def wait_for(predicate, what: str, timeout: float = 30) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.02)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
