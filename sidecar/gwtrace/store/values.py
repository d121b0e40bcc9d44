"""OTLP values as Python, and the text form a query compares them by.

Kept apart from the SQL so that the server's Jaeger converter and the store's
tag filter read values, ids and statuses the same way.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Dict, Iterable, Optional

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

STATUS_UNSET, STATUS_OK, STATUS_ERROR = 0, 1, 2

ZERO_TRACE = bytes(16)
ZERO_SPAN = bytes(8)


def any_value_to_python(value: AnyValue) -> Any:
    """Convert an OTLP AnyValue to str/bool/int/float/bytes/list/dict/None."""
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [any_value_to_python(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return attributes_to_dict(value.kvlist_value.values)
    return getattr(value, which)


def attributes_to_dict(attributes: Iterable[KeyValue]) -> Dict[str, Any]:
    """OTLP attributes to a dict; a repeated key keeps its last value, as in the SDK."""
    return {kv.key: any_value_to_python(kv.value) for kv in attributes}


def tag_text(value: Any) -> str:
    """The text form used to compare a stored value with a query tag.

    Jaeger compares tags as strings; booleans are lower case there.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True, default=_json_default)
    if value is None:
        return ""
    return str(value)


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"cannot encode {type(value).__name__}")


def normalize_trace_id(trace_id: "str | bytes") -> Optional[bytes]:
    """Hex (any case) or raw bytes to the 16-byte id; None if it is not one."""
    if isinstance(trace_id, bytes):
        raw = trace_id
    else:
        text = trace_id.strip()
        if len(text) > 32 or not text:
            return None
        try:
            raw = bytes.fromhex(text.rjust(32, "0"))
        except ValueError:
            return None
    if len(raw) != 16 or raw == ZERO_TRACE:
        return None
    return raw


def is_root(parent: bytes) -> bool:
    """An empty or all-zero parent span id: the span starts its trace (or this part of it)."""
    return not parent or parent == ZERO_SPAN


def span_to_dict(
    s: Span,
    service: str,
    resource: Dict[str, Any],
    scope: str,
    scope_version: str = "",
    resource_id: Optional[int] = None,
) -> Dict[str, Any]:
    """One OTLP span as the plain dict documented on TraceStore.get_trace."""
    parent = s.parent_span_id
    return {
        "trace_id": s.trace_id.hex(),
        "span_id": s.span_id.hex(),
        "parent_span_id": "" if is_root(parent) else parent.hex(),
        "name": s.name,
        "kind": s.kind,
        "start_ns": s.start_time_unix_nano,
        "end_ns": s.end_time_unix_nano,
        "status_code": s.status.code,
        "status_message": s.status.message,
        "attributes": attributes_to_dict(s.attributes),
        "events": [
            {"name": e.name, "time_ns": e.time_unix_nano, "attributes": attributes_to_dict(e.attributes)}
            for e in s.events
        ],
        "links": [
            {"trace_id": l.trace_id.hex(), "span_id": l.span_id.hex(), "attributes": attributes_to_dict(l.attributes)}
            for l in s.links
        ],
        "trace_state": s.trace_state,
        "flags": s.flags,
        "resource": resource,
        "resource_id": resource_id,
        "service": service,
        "scope": scope,
        "scope_version": scope_version,
    }
