"""OpenTelemetry export from a real `meith serve` to a real OTLP/HTTP endpoint run by the test
(decoded with opentelemetry-proto): spans, log records and metrics, redacted like the trail;
with the collector stopped mid-run, calls still succeed."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from meith_core.client import Client
from tests.browser.support import wait_for
from tests.readme import ROOT, readme_block

pytestmark = pytest.mark.slow

SECRET = "ghp_" + "Z" * 36


class Collector:
    """A minimal OTLP/HTTP receiver: keeps every decoded request by signal."""

    def __init__(self) -> None:
        self.spans: list[Any] = []
        self.logs: list[Any] = []
        self.metrics: list[Any] = []
        self.raw: list[bytes] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                collector.raw.append(body)
                if self.path == "/v1/traces":
                    req = ExportTraceServiceRequest.FromString(body)
                    for rs in req.resource_spans:
                        for ss in rs.scope_spans:
                            collector.spans.extend(ss.spans)
                elif self.path == "/v1/logs":
                    req = ExportLogsServiceRequest.FromString(body)
                    for rl in req.resource_logs:
                        for sl in rl.scope_logs:
                            collector.logs.extend(sl.log_records)
                elif self.path == "/v1/metrics":
                    req = ExportMetricsServiceRequest.FromString(body)
                    for rm in req.resource_metrics:
                        for sm in rm.scope_metrics:
                            collector.metrics.extend(sm.metrics)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def attrs(item: Any) -> dict[str, Any]:
    return {kv.key: value(kv.value) for kv in item.attributes}


def value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, kind) if kind else None


@pytest.fixture
def collector() -> Iterator[Collector]:
    c = Collector()
    yield c
    c.stop()


def test_the_readme_names_the_extra_and_the_variable_this_test_uses() -> None:
    install, serve = readme_block("OTEL_EXPORTER_OTLP_ENDPOINT=", "sh").text.splitlines()
    assert install.startswith("pip install './meith_core[otel]'")
    pyproject = (ROOT / "meith_core" / "pyproject.toml").read_text()
    assert 'otel = ["opentelemetry-sdk' in pyproject  # what this module imports
    assert serve.startswith(f"{ENDPOINT_VARIABLE}=http://127.0.0.1:4318 meith serve")


#: The variable the README and docs/console.md say to set.
ENDPOINT_VARIABLE = "OTEL_EXPORTER_OTLP_ENDPOINT"


def test_calls_become_spans_logs_and_metrics_and_a_dead_collector_is_harmless(
    probe_server: Callable[..., Any], collector: Collector
) -> None:
    srv = probe_server(
        env={
            ENDPOINT_VARIABLE: f"http://127.0.0.1:{collector.port}",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            "OTEL_BLRP_SCHEDULE_DELAY": "100",
            "OTEL_METRIC_EXPORT_INTERVAL": "300",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "2",
        }
    )
    with Client(srv.socket, caller="agent", label="otel-agent") as agent:
        ok = agent.call_raw("probe_echo", {"value": {"token": SECRET, "note": "hello"}})
        assert ok["ok"] is True
        denied = agent.call_raw("probe_write", {"name": "nope"})
        assert denied["error"]["code"] == "PERMISSION_DENIED"
        sid = agent.hello()["sessionId"]

    spans = wait_for(lambda: len(collector.spans) >= 2 and collector.spans)
    by_tool = {attrs(s)["meith.tool"]: s for s in spans}
    echo, write = attrs(by_tool["probe_echo"]), attrs(by_tool["probe_write"])
    assert by_tool["probe_echo"].name == "execute_tool probe_echo"
    assert (echo["meith.caller"], echo["meith.agent"], echo["meith.plugin"]) == (
        "agent",
        "otel-agent",
        "probe",
    )
    assert (echo["meith.decision"], echo["meith.outcome"]) == ("allow", "ok")
    assert echo["meith.session"] == sid
    assert "meith.duration_ms" in echo
    assert by_tool["probe_echo"].end_time_unix_nano >= by_tool["probe_echo"].start_time_unix_nano
    assert (write["meith.decision"], write["error.type"]) == ("deny", "PERMISSION_DENIED")
    assert "writes-files" in write["meith.reason"]
    assert by_tool["probe_write"].status.code == 2  # STATUS_CODE_ERROR

    logs = wait_for(lambda: len(collector.logs) >= 2 and collector.logs)
    bodies = [value(r.body) for r in logs]
    echo_log = next(b for b in bodies if b.get("toolName") == "probe_echo")
    assert "[REDACTED]" in echo_log["argsSummary"]
    assert "hello" in echo_log["argsSummary"]
    # Nothing the trail redacted leaves the machine, in any signal.
    assert not any(SECRET.encode() in raw for raw in collector.raw)

    def metric_names() -> set[str]:
        return {m.name for m in collector.metrics}

    wait_for(lambda: {"meith.calls", "meith.denials", "meith.call.duration"} <= metric_names())

    # The collector goes away: calls still succeed, and the runtime stays healthy.
    collector.stop()
    with Client(srv.socket, caller="agent", label="otel-agent") as agent:
        for i in range(20):
            assert agent.call_raw("probe_echo", {"value": i})["ok"] is True
    assert srv.proc.poll() is None
    assert srv.stop() == 0
