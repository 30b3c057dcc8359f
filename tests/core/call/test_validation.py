"""Arguments a tool does not take: the one line says which close ones it meant, or which it
takes (for every caller: the CLI, the socket, the MCP bridge)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict

from meith_core import ErrorCode, Runtime
from tests.core.support import make_tool


class RunArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    command: list[str]
    timeoutMs: int = 1000


async def ran(args: RunArgs) -> dict[str, bool]:
    return {"ran": True}


@pytest.mark.anyio
async def test_an_unknown_argument_names_the_close_one(runtime: Runtime) -> None:
    runtime.register(make_tool(ran, input=RunArgs))
    result = await runtime.call("ran", {"comand": ["true"]})
    assert result.error.code is ErrorCode.VALIDATION_ERROR
    assert result.error.message == (
        'Invalid arguments for "ran": unknown argument "comand". Did you mean "command"?'
    )


@pytest.mark.anyio
async def test_an_unknown_argument_with_nothing_close_lists_the_arguments(
    runtime: Runtime,
) -> None:
    runtime.register(make_tool(ran, input=RunArgs))
    result = await runtime.call("ran", {"command": ["true"], "verbose": True})
    assert result.error.message == (
        'Invalid arguments for "ran": unknown argument "verbose". It takes: command, timeoutMs.'
    )
