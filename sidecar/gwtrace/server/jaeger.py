"""Jaeger's UI data model and query parameters.

Tools written against Jaeger's HTTP API (``/api/traces``...) read spans in
Jaeger's JSON model, not OTLP.  The conversion follows the OpenTelemetry
Collector's OTLP -> Jaeger translator, which is what Jaeger itself applies to
OTLP input: the parent becomes a ``CHILD_OF`` reference and links
``FOLLOWS_FROM``; times are microseconds; span kind and status become the
``span.kind``, ``otel.status_code``, ``otel.status_description`` and
``error`` tags; events become logs with an ``event`` field; resource
attributes become the tags of the span's process.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans, Span

from ..store.reader import ChunkRow
from ..store.tags import SPAN_KIND_NAMES, kind_and_status_tags, status_message_tags
from ..store.values import any_value_to_python, is_root, tag_text

#: OTLP SpanKind from the ``spanKind`` query values Jaeger uses.
SPAN_KIND_BY_NAME = {v: k for k, v in SPAN_KIND_NAMES.items()}
SPAN_KIND_BY_NAME["unspecified"] = 0

_DURATION_UNITS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign
    "\u03bcs": 1_000,  # Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")


class QueryError(ValueError):
    """A query parameter Jaeger would refuse; answered with HTTP 400."""


#: Times and durations are int64 nanoseconds in the store (and in OTLP); a query beyond them is refused.
INT64_MAX = (1 << 63) - 1


def _in_int64(name: str, nanos: int) -> int:
    if not -INT64_MAX <= nanos <= INT64_MAX:
        raise QueryError(f"'{name}' is out of range: times and durations are within ±292 years of 1970 (int64 ns)")
    return nanos


def parse_duration(text: str, name: str = "duration") -> int:
    """A Go ``time.ParseDuration`` string ("10ms", "1.5s", "1m30s") in nanoseconds (within int64)."""
    s = text.strip()
    if s in ("0", "+0", "-0"):
        return 0
    sign = 1
    if s[:1] in "+-" and s:
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    if not s:
        raise QueryError(f"invalid duration {text!r}")
    pos = 0
    total = 0.0
    while pos < len(s):
        m = _DURATION_PART.match(s, pos)
        if not m:
            raise QueryError(f"invalid duration {text!r}: use a number and a unit (ns, us, ms, s, m, h), e.g. 1.5s")
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    if not total <= INT64_MAX:        # also inf and nan (a number of 400 digits is inf as a float)
        _in_int64(name, INT64_MAX + 1)
    return _in_int64(name, sign * int(round(total)))


def parse_tags(values_json: List[str], values_pairs: List[str]) -> Dict[str, str]:
    """``tags={"k":"v"}`` (JSON objects, repeatable) and ``tag=k:v`` (repeatable)."""
    tags: Dict[str, str] = {}
    for raw in values_json:
        try:
            obj = json.loads(raw)
        except ValueError:
            raise QueryError(f"malformed 'tags' parameter {raw!r}: not a JSON object") from None
        if not isinstance(obj, dict):
            raise QueryError(f"malformed 'tags' parameter {raw!r}: not a JSON object")
        for key, value in obj.items():
            if not isinstance(value, str):
                raise QueryError(f"malformed 'tags' parameter: the value of {key!r} must be a string")
            tags[key] = value
    for pair in values_pairs:
        key, sep, value = pair.partition(":")
        if not sep or not key:
            raise QueryError(f"malformed 'tag' parameter {pair!r}: expected key:value")
        tags[key] = value
    return tags


def parse_micros(name: str, value: Optional[str]) -> Optional[int]:
    """A ``start``/``end`` parameter (Unix microseconds) in nanoseconds."""
    if value in (None, ""):
        return None
    try:
        micros = int(value)
    except ValueError:
        raise QueryError(f"'{name}' must be an integer number of microseconds since the epoch") from None
    return _in_int64(name, micros * 1000)


def parse_limit(value: Optional[str], default: int) -> int:
    if value in (None, ""):
        return default
    try:
        limit = int(value)
    except ValueError:
        raise QueryError("'limit' must be an integer") from None
    if limit < 0:
        raise QueryError("'limit' must not be negative")
    return limit or default


def envelope(data: Any, errors: Optional[List[Dict[str, Any]]] = None, total: Optional[int] = None) -> Dict[str, Any]:
    """Jaeger's response envelope."""
    if total is None:
        total = len(data) if isinstance(data, list) else 0
    return {"data": data, "total": total, "limit": 0, "offset": 0, "errors": errors}


def error_envelope(code: int, message: str, trace_id: Optional[str] = None) -> Dict[str, Any]:
    err: Dict[str, Any] = {"code": code, "msg": message}
    if trace_id is not None:
        err["traceID"] = trace_id
    return envelope(None, [err], total=0)


def tag(key: str, value: Any) -> Dict[str, Any]:
    """A Jaeger key/type/value tag; arrays and maps become JSON strings, as in the Collector."""
    if isinstance(value, bool):
        return {"key": key, "type": "bool", "value": value}
    if isinstance(value, int):
        return {"key": key, "type": "int64", "value": value}
    if isinstance(value, float):
        return {"key": key, "type": "float64", "value": value}
    if isinstance(value, bytes):
        return {"key": key, "type": "binary", "value": tag_text(value)}
    if isinstance(value, str):
        return {"key": key, "type": "string", "value": value}
    return {"key": key, "type": "string", "value": tag_text(value)}


# ---------------------------------------------------------------------------
# The one OTLP -> Jaeger converter, straight from stored chunks (no
# intermediate dicts: /api/traces on a 5,000-span trace is the hot path).

_SCALAR_TYPES = {"string_value": "string", "bool_value": "bool", "int_value": "int64", "double_value": "float64"}

#: (resource id, service) of a span: one Jaeger process each.
ProcessKey = Tuple[int, str]
#: Called with each OTLP span, its service and its Jaeger form, to add fields.
Annotate = Callable[[Span, str, Dict[str, Any]], None]


def _kv_tags(attributes: Iterable[KeyValue]) -> List[Dict[str, Any]]:
    out = []
    for kv in attributes:
        value = kv.value
        which = value.WhichOneof("value")
        kind = _SCALAR_TYPES.get(which)  # type: ignore[arg-type]
        if kind is not None:
            out.append({"key": kv.key, "type": kind, "value": getattr(value, which)})  # type: ignore[arg-type]
        else:
            out.append(tag(kv.key, any_value_to_python(value)))
    return out


def _scope_tags(ss: ScopeSpans) -> List[Dict[str, Any]]:
    out = []
    if ss.scope.name:
        out.append({"key": "otel.scope.name", "type": "string", "value": ss.scope.name})
    if ss.scope.version:
        out.append({"key": "otel.scope.version", "type": "string", "value": ss.scope.version})
    return out


@functools.lru_cache(maxsize=64)
def _kind_and_status_tags(kind: int, status_code: int) -> Tuple[Dict[str, Any], ...]:
    """The derived tags that depend on kind and status code only, built once per pair.

    Shared by every span of a response (the JSON is written once, never
    edited), which keeps a 5,000-span trace as fast as before.
    """
    return tuple({"key": k, "type": t, "value": v} for k, t, v in kind_and_status_tags(kind, status_code))


def span_from_otlp(s: Span, trace_hex: str, scope_tags: List[Dict[str, Any]]) -> Dict[str, Any]:
    """One OTLP span in Jaeger's model (``processID`` left for the caller to fill)."""
    start, end = s.start_time_unix_nano, s.end_time_unix_nano
    parent = s.parent_span_id
    refs = []
    if not is_root(parent):
        refs.append({"refType": "CHILD_OF", "traceID": trace_hex, "spanID": parent.hex()})
    for link in s.links:
        refs.append({"refType": "FOLLOWS_FROM", "traceID": link.trace_id.hex(), "spanID": link.span_id.hex()})
    tags = _kv_tags(s.attributes)
    status = s.status
    tags.extend(_kind_and_status_tags(s.kind, status.code))
    if status.message:
        tags.extend({"key": k, "type": t, "value": v} for k, t, v in status_message_tags(status.message))
    tags.extend(scope_tags)
    if s.trace_state:
        tags.append({"key": "w3c.tracestate", "type": "string", "value": s.trace_state})
    logs = [
        {"timestamp": e.time_unix_nano // 1000,
         "fields": [{"key": "event", "type": "string", "value": e.name}] + _kv_tags(e.attributes)}
        for e in s.events
    ]
    return {
        "traceID": trace_hex,
        "spanID": s.span_id.hex(),
        # OTLP keeps the W3C trace flags in the low byte; a stored span was sampled.
        "flags": (s.flags & 0xFF) or 1,
        "operationName": s.name,
        "references": refs,
        "startTime": start // 1000,
        "duration": (end - start) // 1000,
        "tags": tags,
        "logs": logs,
        "processID": "",
        "warnings": None,
    }


#: A converted span with what to sort and group it by: (start, -end, Jaeger span, process key).
SpanRow = Tuple[int, int, Dict[str, Any], ProcessKey]


def spans_from_chunks(chunks: Sequence[ChunkRow], annotate: Optional[Annotate] = None) -> List[SpanRow]:
    """Jaeger spans of stored chunks, sorted by start time (parents first on ties)."""
    rows = []
    for resource_id, service, _, ss in chunks:
        if not ss.spans:
            continue
        key = (resource_id, service)
        scope_tags = _scope_tags(ss)
        trace_hex = ss.spans[0].trace_id.hex()  # a chunk holds spans of one trace
        for s in ss.spans:
            span = span_from_otlp(s, trace_hex, scope_tags)
            if annotate is not None:
                annotate(s, service, span)
            rows.append((s.start_time_unix_nano, -s.end_time_unix_nano, span, key))
    rows.sort(key=lambda r: (r[0], r[1]))
    return rows


def process_tags(resource: Dict[str, Any]) -> List[Dict[str, Any]]:
    """A resource's attributes as the tags of its Jaeger process (the service name is the process's name)."""
    return [tag(k, v) for k, v in resource.items() if k != "service.name"]


def trace_from_chunks(chunks: Sequence[ChunkRow]) -> Dict[str, Any]:
    """A Jaeger trace from ``TraceStore.trace_chunks``, spans sorted by start time."""
    resources = {(resource_id, service): resource for resource_id, service, resource, _ in chunks}
    spans = spans_from_chunks(chunks)
    # Processes are numbered in span order.
    processes: Dict[str, Dict[str, Any]] = {}
    process_ids: Dict[ProcessKey, str] = {}
    for _, _, span, key in spans:
        pid = process_ids.get(key)
        if pid is None:
            pid = process_ids[key] = f"p{len(process_ids) + 1}"
            processes[pid] = {"serviceName": key[1], "tags": process_tags(resources[key])}
        span["processID"] = pid
    trace_hex = spans[0][2]["traceID"] if spans else ""
    return {"traceID": trace_hex, "spans": [r[2] for r in spans], "processes": processes, "warnings": None}
