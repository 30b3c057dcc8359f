"""Which tools exist and which plugin registered each: taken names refused a whole batch at a
time, and tools described in registration order."""

from __future__ import annotations

import pytest

from meith_core import Runtime
from meith_core.call.catalogue import DuplicateToolError
from tests.core.call.support import defn


@pytest.mark.anyio
async def test_registering_a_taken_name_is_refused_and_registers_nothing_of_the_batch(
    runtime: Runtime,
) -> None:
    runtime.register(defn(name="taken"))
    with pytest.raises(DuplicateToolError, match="already registered"):
        runtime.catalogue.register_many([defn(name="fresh"), defn(name="taken")], "other")
    assert "fresh" not in runtime.catalogue
    assert runtime.catalogue.get("taken").plugin_id == "app"  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_a_batch_declaring_one_name_twice_is_refused(runtime: Runtime) -> None:
    with pytest.raises(DuplicateToolError, match="twice"):
        runtime.catalogue.register_many([defn(name="twin"), defn(name="twin")], "p")
    assert "twin" not in runtime.catalogue


@pytest.mark.anyio
async def test_describe_lists_tools_in_registration_order(runtime: Runtime) -> None:
    runtime.register([defn(name="zeta"), defn(name="alpha")])
    runtime.register(defn(name="mid"), plugin_id="other")
    described = [d for d in runtime.describe() if d["plugin"] in ("app", "other")]
    assert [d["name"] for d in described] == ["zeta", "alpha", "mid"]
    assert [d["plugin"] for d in described] == ["app", "app", "other"]
