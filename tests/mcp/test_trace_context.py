"""The W3C trace context an MCP client puts in a request's `_meta` reaches meith's
OpenTelemetry export: the call's span is a child of the client's span, in both eras, through a
real `meith mcp` and a real `meith serve` exporting to an OTLP endpoint the test runs."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from meith_core.mcp.call_driver import trace_context
from tests.browser.support import wait_for
from tests.mcp.conftest import ERAS, stdio_client
from tests.server.test_otel_export import Collector, attrs

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture
def collector() -> Iterator[Collector]:
    c = Collector()
    yield c
    c.stop()


def test_only_a_well_formed_traceparent_is_taken() -> None:
    parent = f"00-{'a' * 32}-{'b' * 16}-01"
    assert trace_context({"traceparent": parent, "tracestate": "k=v"}) == {
        "traceparent": parent,
        "tracestate": "k=v",
    }
    assert trace_context({"traceparent": parent, "tracestate": "x" * 600}) == {
        "traceparent": parent
    }
    for bad in ("00-zz", parent.upper(), None, 7, parent + "\n"):
        assert trace_context({"traceparent": bad}) is None
    assert trace_context(None) is None


@pytest.mark.parametrize("era", ERAS)
async def test_the_calls_span_joins_the_clients_trace(
    agent_server: Any, collector: Collector, era: str
) -> None:
    srv = agent_server(
        env={
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{collector.port}",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
        }
    )
    trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    meta: Any = {"traceparent": f"00-{trace_id}-{span_id}-01", "tracestate": "vendor=1"}
    async with stdio_client(srv, mode=era) as mcp:
        joined = await mcp.call_tool("mcptest_echo", {"value": 1}, meta=meta)
        alone = await mcp.call_tool("mcptest_echo", {"value": 2})
    assert not joined.is_error
    assert not alone.is_error

    def two() -> list[Any] | None:
        echoes = [s for s in collector.spans if attrs(s).get("meith.tool") == "mcptest_echo"]
        return echoes if len(echoes) >= 2 else None

    spans = wait_for(two)
    children = [s for s in spans if s.trace_id.hex() == trace_id]
    assert len(children) == 1
    assert children[0].parent_span_id.hex() == span_id
    assert children[0].trace_state == "vendor=1"
    # Without one, the call is a trace of its own.
    assert any(s.trace_id.hex() != trace_id and not s.parent_span_id for s in spans)
