"""OTLP/JSON codec built on the official protobuf messages.

OTLP/JSON is the protobuf JSON mapping with three differences
(opentelemetry-proto ``docs/specification.md``): trace and span ids are hex,
not base64; enums are integers; unknown fields must be ignored.  So decoding
rewrites the ids to base64 and hands the rest to ``json_format.ParseDict``,
and encoding does the reverse after ``MessageToDict``.  Both directions keep
lowerCamelCase keys and int64 values as decimal strings (the mapping already
does that); decoding also accepts the proto field names and plain integers,
as receivers should be lenient.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Dict, List, Tuple

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

# Where ids live in a TracesData / ExportTraceServiceRequest document.
_SPAN_ID_KEYS = ("traceId", "trace_id", "spanId", "span_id", "parentSpanId", "parent_span_id")
_LINK_ID_KEYS = ("traceId", "trace_id", "spanId", "span_id")


class OtlpJsonError(ValueError):
    """The body is not OTLP/JSON; the message says where and why."""


def _list(obj: Dict[str, Any], *keys: str) -> List[Any]:
    for key in keys:
        if key in obj:
            value = obj[key]
            if value is None:
                return []
            if not isinstance(value, list):
                raise OtlpJsonError(f"'{key}' must be an array")
            return value
    return []


def _hex_to_b64(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise _BadId(f"{where} must be a hex string")
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raise _BadId(f"{where} is not hex: {value[:40]!r}") from None
    return base64.b64encode(raw).decode("ascii")


class _BadId(Exception):
    pass


def parse_request(body: bytes) -> Tuple[ExportTraceServiceRequest, int, List[str]]:
    """Decode an OTLP/JSON export request.

    Returns (request, rejected, problems): a span whose id is not hex is
    dropped here and counted, so that the rest of the batch is still stored
    and the client learns about it through partial success.
    """
    try:
        doc = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise OtlpJsonError(f"body is not JSON: {exc}") from None
    except RecursionError:  # the caller bounds the nesting first (store.limits); one line if that was not enough
        raise OtlpJsonError("body is not JSON: nested too deep") from None
    if not isinstance(doc, dict):
        raise OtlpJsonError("body must be a JSON object with 'resourceSpans'")
    rejected = 0
    problems: List[str] = []
    for ri, rs in enumerate(_list(doc, "resourceSpans", "resource_spans")):
        if not isinstance(rs, dict):
            raise OtlpJsonError(f"resourceSpans[{ri}] must be an object")
        for si, ss in enumerate(_list(rs, "scopeSpans", "scope_spans")):
            if not isinstance(ss, dict):
                raise OtlpJsonError(f"resourceSpans[{ri}].scopeSpans[{si}] must be an object")
            spans = _list(ss, "spans")
            kept = []
            for i, span in enumerate(spans):
                where = f"resourceSpans[{ri}].scopeSpans[{si}].spans[{i}]"
                if not isinstance(span, dict):
                    raise OtlpJsonError(f"{where} must be an object")
                try:
                    for key in _SPAN_ID_KEYS:
                        if key in span and span[key] is not None:
                            span[key] = _hex_to_b64(span[key], f"{where}.{key}")
                    for li, link in enumerate(_list(span, "links")):
                        if isinstance(link, dict):
                            for key in _LINK_ID_KEYS:
                                if key in link and link[key] is not None:
                                    link[key] = _hex_to_b64(link[key], f"{where}.links[{li}].{key}")
                except _BadId as exc:
                    rejected += 1
                    if len(problems) < 5:
                        problems.append(str(exc))
                    continue
                kept.append(span)
            if len(kept) != len(spans):
                ss["spans"] = kept
    request = ExportTraceServiceRequest()
    try:
        json_format.ParseDict(doc, request, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise OtlpJsonError(f"not OTLP/JSON: {exc}") from None
    except RecursionError:
        raise OtlpJsonError("not OTLP/JSON: nested too deep") from None
    _readable(request)
    return request, rejected, problems


def _readable(request: ExportTraceServiceRequest) -> None:
    """Refuse values nested deeper than protobuf decodes (100 messages): built from JSON they would be
    stored, and then every read of their trace would fail. A JSON request is already slow to decode
    (pure Python); this re-parse of its encoding costs a few per cent of that."""
    try:
        ExportTraceServiceRequest.FromString(request.SerializeToString())
    except DecodeError:
        raise OtlpJsonError("not OTLP/JSON: values nested deeper than protobuf allows (100 levels)") from None


def _ids_to_hex(obj: Dict[str, Any], keys: Tuple[str, ...]) -> None:
    for key in keys:
        if key in obj:
            obj[key] = base64.b64decode(obj[key]).hex()


def message_to_json(message: Message) -> Dict[str, Any]:
    """Any OTLP trace message (TracesData, request, ResourceSpans...) as an OTLP/JSON dict."""
    doc = json_format.MessageToDict(message, use_integers_for_enums=True, preserving_proto_field_name=False)
    resource_spans = doc.get("resourceSpans")
    if resource_spans is None and "scopeSpans" in doc:
        resource_spans = [doc]
    for rs in resource_spans or []:
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                _ids_to_hex(span, ("traceId", "spanId", "parentSpanId"))
                for link in span.get("links", []):
                    _ids_to_hex(link, ("traceId", "spanId"))
    return doc

