"""Loading plugin objects directly (`Runtime.load_plugin`), as embedding programs and tests do."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict

from meith_core import Runtime, ToolContext, ToolDefinition, hookimpl, tool


class _NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Plugin:
    """One instance per runtime: tools are built on bound methods in `meith_tools`."""

    def __init__(self) -> None:
        self.calls = 0

    async def _count(self, ctx: ToolContext, args: _NoArgs) -> int:
        """Count calls on this plugin instance."""
        self.calls += 1
        return self.calls

    @hookimpl
    def meith_tools(self) -> list[ToolDefinition]:
        return [tool(self._count, name="load_count", capabilities=["read-only"])]


@pytest.mark.anyio
async def test_load_plugin_registers_the_plugins_tools_under_its_id(runtime: Runtime) -> None:
    record = runtime.load_plugin("counter", _Plugin)
    assert record.status == "loaded", record.reason
    assert [t.name for t in record.tools] == ["load_count"]
    assert runtime.catalogue.get("load_count") is not None
    assert runtime.catalogue.get("load_count").plugin_id == "counter"  # type: ignore[union-attr]
    assert (await runtime.call("load_count")).content == 1
    assert (await runtime.call("load_count")).content == 2


@pytest.mark.anyio
async def test_load_plugin_with_no_tools_loads(runtime: Runtime) -> None:
    class Empty:
        @hookimpl
        def meith_tools(self) -> list[ToolDefinition]:
            return []

    record = runtime.load_plugin("empty", Empty)
    assert record.status == "loaded", record.reason
    assert record.fingerprint is not None
