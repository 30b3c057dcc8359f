"""OpenTelemetry export (the `otel` extra): every call becomes a span, every audit record a log
record, with counters of calls and denials and a latency histogram.

Off unless `OTEL_EXPORTER_OTLP_ENDPOINT` is set (or the `telemetry.otlpEndpoint` setting):
then, and only then, the SDK is imported and the exporter is the audit trail's observer. It is
fed from the records the trail writes, so what leaves the machine is redacted exactly as the
trail is (a span carries no arguments at all). The observer only queues the record (bounded;
when full, telemetry is dropped and counted); one thread turns records into telemetry, and the
SDK's batch processors (bounded queues too) export from their own threads: a collector that is
slow or down loses telemetry, never slows or fails a call.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Mapping
from typing import Any, Final

import structlog

from meith_core._version import __version__

_log = structlog.get_logger("meith.otel")

ENDPOINT_ENV: Final = "OTEL_EXPORTER_OTLP_ENDPOINT"
#: Settings section and key that name an endpoint when the environment does not.
SETTINGS_SECTION: Final = "telemetry"
SETTINGS_KEY: Final = "otlpEndpoint"
#: Seconds the runtime waits at shutdown for what is queued to be sent.
SHUTDOWN_WAIT_S: Final = 3.0
#: Records waiting to become telemetry; beyond this they are dropped (and counted).
QUEUE_BOUND: Final = 8192


def otlp_endpoint(environ: Mapping[str, str], settings: Mapping[str, Any]) -> str | None:
    """The OTLP/HTTP base URL to export to, or None (export off)."""
    value = environ.get(ENDPOINT_ENV, "").strip()
    if not value:
        section = settings.get(SETTINGS_SECTION)
        if isinstance(section, Mapping):
            value = str(section.get(SETTINGS_KEY) or "").strip()
    return value.rstrip("/") or None


def start_export(environ: Mapping[str, str], settings: Mapping[str, Any]) -> OtelExport | None:
    """The exporter when an endpoint is configured and the SDK is installed, else None."""
    endpoint = otlp_endpoint(environ, settings)
    if endpoint is None:
        return None
    try:
        return OtelExport(endpoint, service_name=environ.get("OTEL_SERVICE_NAME") or "meith")
    except ImportError as exc:
        _log.warning(
            "OpenTelemetry export is configured but the SDK is missing: install meith-core[otel]",
            missing=exc.name,
        )
        return None


class OtelExport:
    """Turns audit records into spans, log records and metrics."""

    def __init__(self, endpoint: str, *, service_name: str = "meith") -> None:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.trace import SpanKind, Status, StatusCode
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        self.endpoint = endpoint
        resource = Resource.create({"service.name": service_name, "service.version": __version__})
        # Providers of our own, never the process-wide globals: an embedding program's
        # telemetry is its own business.
        self._traces = TracerProvider(resource=resource)
        self._traces.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces"))
        )
        self._logs = LoggerProvider(resource=resource)
        self._logs.add_log_record_processor(
            BatchLogRecordProcessor(OTLPLogExporter(endpoint=f"{endpoint}/v1/logs"))
        )
        reader = PeriodicExportingMetricReader(
            OTLPMetricExporter(endpoint=f"{endpoint}/v1/metrics")
        )
        self._metrics = MeterProvider(resource=resource, metric_readers=[reader])
        self._tracer = self._traces.get_tracer("meith", __version__)
        self._propagator = TraceContextTextMapPropagator()
        self._logger = self._logs.get_logger("meith.audit", __version__)
        meter = self._metrics.get_meter("meith", __version__)
        self._calls = meter.create_counter("meith.calls", unit="{call}", description="Tool calls")
        self._denials = meter.create_counter(
            "meith.denials", unit="{call}", description="Tool calls denied by the permission gates"
        )
        self._latency = meter.create_histogram(
            "meith.call.duration", unit="ms", description="Tool call duration"
        )
        self._kind, self._status, self._code = SpanKind, Status, StatusCode
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(QUEUE_BOUND)
        #: Records dropped because the queue was full.
        self.dropped = 0
        self._worker = threading.Thread(target=self._work, name="meith-otel", daemon=True)
        self._worker.start()

    def __call__(self, record: dict[str, Any]) -> None:
        """One record the trail wrote: queued, never waited for."""
        try:
            self._queue.put_nowait(record)
        except queue.Full:
            self.dropped += 1

    def _work(self) -> None:
        while (record := self._queue.get()) is not None:
            try:
                self.export(record)
            except Exception as exc:  # one odd record never stops the export
                _log.warning("telemetry record not exported", error=f"{type(exc).__name__}: {exc}")

    def export(self, record: dict[str, Any]) -> None:
        """Turn one record into a log record, and a call's outcome into a span and metrics."""
        kind = record.get("kind")
        self._log_record(record)
        if kind is None:
            self._span(record)
        if kind in (None, "coalesced"):
            labels = {
                "meith.tool": str(record.get("toolName")),
                "meith.caller": str(record.get("caller")),
                "meith.decision": str(record.get("decision")),
                "meith.outcome": str(record.get("outcome")),
            }
            count = int(record.get("count") or 1)
            self._calls.add(count, labels)
            if record.get("decision") == "deny":
                self._denials.add(count, {k: labels[k] for k in ("meith.tool", "meith.caller")})
            if kind is None and isinstance(record.get("durationMs"), int | float):
                self._latency.record(
                    float(record["durationMs"]), {"meith.tool": labels["meith.tool"]}
                )

    def _span(self, record: dict[str, Any]) -> None:
        end_ns = int(record.get("ts") or 0) * 1_000_000
        duration_ns = int(float(record.get("durationMs") or 0) * 1_000_000)
        tool = str(record.get("toolName"))
        outcome = str(record.get("outcome"))
        attributes = _attributes(
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool,
                "meith.tool": tool,
                "meith.plugin": record.get("plugin"),
                "meith.caller": record.get("caller"),
                "meith.agent": record.get("label"),
                "meith.session": record.get("sessionId"),
                "meith.request_id": record.get("requestId"),
                "meith.decision": record.get("decision"),
                "meith.reason": record.get("reason"),
                "meith.outcome": outcome,
                "meith.duration_ms": record.get("durationMs"),
                "meith.capabilities": record.get("capabilities"),
                "error.type": None if outcome == "ok" else outcome,
                "meith.audit_id": record.get("id"),
            }
        )
        carrier = record.get("traceContext")
        span = self._tracer.start_span(
            f"execute_tool {tool}",
            # The caller's trace (an MCP request's `_meta`), when it sent one: the call is
            # part of the agent's trace.
            context=self._propagator.extract(carrier) if isinstance(carrier, dict) else None,
            kind=self._kind.INTERNAL,
            attributes=attributes,
            start_time=end_ns - duration_ns,
        )
        if outcome != "ok":
            span.set_status(self._status(self._code.ERROR, outcome))
        span.end(end_time=end_ns)

    def _log_record(self, record: dict[str, Any]) -> None:
        from opentelemetry._logs import SeverityNumber

        denied = record.get("decision") == "deny"
        failed = record.get("outcome") not in ("ok", "started", None)
        self._logger.emit(
            timestamp=int(record.get("ts") or 0) * 1_000_000,
            severity_number=SeverityNumber.WARN if denied or failed else SeverityNumber.INFO,
            severity_text="WARN" if denied or failed else "INFO",
            body=_attributes(record),
            event_name="meith.audit",
            attributes=_attributes(
                {
                    "meith.audit.kind": record.get("kind") or "call",
                    "meith.tool": record.get("toolName"),
                    "meith.session": record.get("sessionId"),
                    "meith.decision": record.get("decision"),
                    "meith.outcome": record.get("outcome"),
                }
            ),
        )

    def shutdown(self, wait_s: float = SHUTDOWN_WAIT_S) -> None:
        """Send what is queued, waiting at most `wait_s` (a collector that is down is given up)."""

        def stop() -> None:
            self._queue.put(None)
            self._worker.join(wait_s)
            for provider in (self._traces, self._logs, self._metrics):
                with contextlib.suppress(Exception):
                    provider.shutdown()

        thread = threading.Thread(target=stop, name="meith-otel-shutdown", daemon=True)
        thread.start()
        thread.join(wait_s)


def _attributes(values: Mapping[str, Any]) -> dict[str, Any]:
    """OpenTelemetry values: no None, lists of scalars as they are, anything else as text."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, str | bool | int | float):
            out[key] = value
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            out[key] = list(value)
        else:
            out[key] = str(value)
    return out
