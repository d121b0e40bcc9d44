"""Jaeger's tag semantics over OTLP spans, defined once.

Jaeger shows a span's kind and status as tags (``span.kind``,
``otel.status_code``, ``error``, ``otel.status_description``) and lets a
search match them like any attribute.  The server's converter writes these
tags and the store's search matches them; both read them from
``derived_tags`` so that what a search finds is what the UI shows.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from .values import STATUS_ERROR, STATUS_OK, any_value_to_python, tag_text

#: OTLP SpanKind -> the ``span.kind`` tag value Jaeger shows.
SPAN_KIND_NAMES = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}

#: The keys of the derived tags.
DERIVED_KEYS = frozenset({"span.kind", "otel.status_code", "error", "otel.status_description"})

#: (key, Jaeger type, value) of one derived tag.
DerivedTag = Tuple[str, str, Any]


def kind_and_status_tags(kind: int, status_code: int) -> List[DerivedTag]:
    """The derived tags that depend on the span kind and status code, in the Collector's order."""
    out: List[DerivedTag] = []
    kind_name = SPAN_KIND_NAMES.get(kind)
    if kind_name:
        out.append(("span.kind", "string", kind_name))
    if status_code == STATUS_ERROR:
        out.append(("otel.status_code", "string", "ERROR"))
        out.append(("error", "bool", True))
    elif status_code == STATUS_OK:
        out.append(("otel.status_code", "string", "OK"))
    return out


def status_message_tags(status_message: str) -> List[DerivedTag]:
    """The derived tag of a status message (after the others), if there is one."""
    return [("otel.status_description", "string", status_message)] if status_message else []


def derived_tags(kind: int, status_code: int, status_message: str) -> List[DerivedTag]:
    """Every tag Jaeger derives from span fields, in the order the OTel Collector writes them."""
    return kind_and_status_tags(kind, status_code) + status_message_tags(status_message)


def span_has_tags(s: Span, resource_attrs: Dict[str, Any], tags: Dict[str, str]) -> bool:
    """Jaeger's rule: each tag must be on the span, its process (resource) or one of its logs."""
    for key, want in tags.items():
        if key in resource_attrs and tag_text(resource_attrs[key]) == want:
            continue
        if key in DERIVED_KEYS and _derived_text(s, key) == want:
            continue
        if has_attribute(s.attributes, key, want):
            continue
        if any(has_attribute(e.attributes, key, want) for e in s.events):
            continue
        return False
    return True


def _derived_text(s: Span, key: str) -> Optional[str]:
    """The text of one derived tag of a span, None if the span has no such tag."""
    for k, _, value in derived_tags(s.kind, s.status.code, s.status.message):
        if k == key:
            return tag_text(value)
    return None


def has_attribute(attributes: Iterable[KeyValue], key: str, want: str) -> bool:
    """Whether ``key`` has the text value ``want``; only a matching key's value is converted."""
    return any(kv.key == key and tag_text(any_value_to_python(kv.value)) == want for kv in attributes)
