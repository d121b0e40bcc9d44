"""The embedded store as an OpenTelemetry ``SpanExporter``.

Where a node has no collector, the sidecar hands its spans, OTLP-encoded as
for a collector, to this exporter: the same bytes land in the SQLite store
that ``gwtrace show`` and ``gwtrace serve`` read.
"""

from __future__ import annotations

import logging
from typing import Optional, Sequence

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from gwtrace.store import TraceStore

log = logging.getLogger("gwtrace.store.exporter")


class StoreSpanExporter(SpanExporter):
    """Writes spans, OTLP-encoded, into the embedded SQLite store."""

    def __init__(self, path: Optional[str] = None) -> None:
        self.store = TraceStore(path)
        self.path = str(self.store.path)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            accepted, rejected, message = self.store.ingest(encode_spans(spans))
        except Exception as exc:  # noqa: BLE001 - a store failure must not kill the sidecar
            log.warning("embedded store rejected a batch: %s", exc)
            return SpanExportResult.FAILURE
        if rejected:
            log.warning("embedded store rejected %d span(s): %s", rejected, message)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.store.close()
