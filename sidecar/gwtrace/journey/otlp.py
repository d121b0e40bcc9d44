"""Journey spans straight into an OTLP request (protobuf), without the SDK's span objects.

Why: a schedd's event log holds millions of events; building an SDK
``ReadableSpan`` per span and then encoding it cost four times the reading
of the log itself (bench/journey).  The spans here are plain: ids, times,
status, attributes (str, int, float, bool), events and links.
"""

from typing import Any, Dict, List, Sequence, Tuple

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from opentelemetry.trace import Link

from gwtrace import __version__
from gwtrace.wire.span import SpanRecord

SCOPE_NAME = "gwtrace.journey"
_STATUS = {"ok": Status.STATUS_CODE_OK, "error": Status.STATUS_CODE_ERROR}


def _set_value(target: Any, value: Any) -> None:
    if isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, int):
        target.int_value = value
    elif isinstance(value, float):
        target.double_value = value
    else:
        target.string_value = str(value)


def _attributes(repeated: Any, attributes: Dict[str, Any]) -> None:
    for key, value in attributes.items():
        if value is None:
            continue
        kv = repeated.add()
        kv.key = key
        _set_value(kv.value, value)


def _span(out: Span, rec: SpanRecord, links: Sequence[Link]) -> None:
    out.trace_id = bytes.fromhex(rec.trace_id)
    out.span_id = bytes.fromhex(rec.span_id)
    if rec.parent_id:
        out.parent_span_id = bytes.fromhex(rec.parent_id)
    out.flags = 0x101 | (0x200 if rec.parent_remote else 0) if rec.parent_id else 0x101
    out.name = rec.name
    out.kind = Span.SPAN_KIND_INTERNAL
    out.start_time_unix_nano = rec.start_us * 1000
    out.end_time_unix_nano = rec.end_us * 1000
    _attributes(out.attributes, rec.attributes)
    for name, when_us, attrs in rec.events:
        event = out.events.add()
        event.time_unix_nano = when_us * 1000
        event.name = name
        _attributes(event.attributes, attrs)
    for link in links:
        pb = out.links.add()
        pb.trace_id = link.context.trace_id.to_bytes(16, "big")
        pb.span_id = link.context.span_id.to_bytes(8, "big")
        _attributes(pb.attributes, dict(link.attributes or {}))
    code = _STATUS.get(rec.status)
    if code is not None:
        out.status.code = code


def to_request(pairs: List[Tuple[SpanRecord, List[Link]]], resource: Dict[str, Any]) -> ExportTraceServiceRequest:
    """One request: one resource, one ScopeSpans per trace (a job's spans come together), the spans with
    their links.  One trace per ScopeSpans is the store's fast path: it keeps each as one chunk as it
    is, instead of splitting a mixed one span by span."""
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    _attributes(resource_spans.resource.attributes, resource)
    current, add = None, None
    for rec, links in pairs:
        if rec.trace_id != current:
            scope_spans = resource_spans.scope_spans.add()
            scope_spans.scope.name = SCOPE_NAME
            scope_spans.scope.version = __version__
            add, current = scope_spans.spans.add, rec.trace_id
        _span(add(), rec, links)
    return request



