"""The built-in `core` tools in-process: `app_health`'s checks."""

from __future__ import annotations

import pytest

from meith_core import Runtime
from meith_core.audit import segments
from tests.core.audit.support import flood_entry


@pytest.mark.anyio
async def test_app_health_warns_when_the_trail_is_near_its_limit(runtime: Runtime) -> None:
    runtime.settings.merge({"audit": {"maxBytes": segments.MIN_MAX_BYTES}})
    health = await runtime.call("app_health")
    assert not [c for c in health.content["checks"] if c["name"] == "audit.capacity"]
    for i in range(1000):  # about 1 MB: near (and at) the 1 MiB budget
        assert runtime.audit.write(flood_entry(i))
    health = await runtime.call("app_health")
    (check,) = [c for c in health.content["checks"] if c["name"] == "audit.capacity"]
    assert check["status"] == "warn"
    assert "audit.maxBytes" in check["message"]
    assert health.content["status"] == "ok"  # advice, not a failure
