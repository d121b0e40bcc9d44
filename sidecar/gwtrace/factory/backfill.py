"""``gwtrace ingest --factory-logs``: the glideins of a factory's files, as traces.

Every glidein a client log directory knows of (``collect``) becomes the trace
``to_trace`` makes of its record, sent like any other ingest input (the
embedded store, or the OTLP endpoint). The ids are derived from the
glidein's identity, so a second run sends spans the store already holds
(it keeps one copy) and a glidein that also ran gwtrace lands in its own
trace. Incomplete glideins are sent too: their root span says why. Into
the embedded store, the records themselves are kept as well (for
``gwtrace account``/``analyze``/``glideins`` without re-reading files).
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, TextIO

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource

from gwtrace.export.otlp import to_readable_spans
from .collect import collect
from .record import GlideinRecord
from .to_trace import record_to_spans, resource_attributes

BATCH = 200  # glideins per request: a few MB at most, few enough round trips


def backfill(dirs: List[str], send: Callable[[ExportTraceServiceRequest], None], err: TextIO,
             keep: Optional[Callable[[Sequence[GlideinRecord]], Optional[Dict[int, str]]]] = None
             ) -> "tuple[int, int, int]":
    """Send every glidein of ``dirs``; returns (glideins, spans, files that could not be read and blocks skipped:
    one line each on ``err``).

    ``keep`` receives the records themselves (the embedded store keeps them for accounting) and may answer
    the trace of those whose spans belong elsewhere than their identity's id (``put_glidein_records``).
    """
    found = collect(dirs)
    moved = (keep(found.records) or {}) if keep is not None else {}
    for line in found.errors + found.skipped:
        err.write(f"gwtrace ingest: {line}\n")
    glideins = spans = 0
    batch = []
    for index, rec in enumerate(found.records):
        records = record_to_spans(rec, moved.get(index))
        if not records:
            continue
        batch.extend(to_readable_spans(records, Resource(resource_attributes(rec))))
        glideins += 1
        spans += len(records)
        if glideins % BATCH == 0:
            send(encode_spans(batch))
            batch = []
    if batch:
        send(encode_spans(batch))
    return glideins, spans, len(found.errors) + len(found.skipped)
