"""What one request, span or value may cost the factory side.

Why: worker nodes are untrusted, and OTLP amplifies. An empty attribute is 2 bytes on the wire and
about 50 once upb has decoded it, an empty span 2 bytes and about 180, so a 64 KB gzip request of
33 million empty attributes took 4 GB of the server's memory, and reading that trace back died.
The bounds live here so that the server, ``gwtrace ingest`` and the readers apply the same ones
(docs/server.md, "Limits", lists them):

* Before anything is decoded: ``decode_cost`` is an upper bound of the memory it takes to decode
  an encoded request (or a stored chunk), from a count of the bytes that could open a submessage;
  ``json_cost`` and ``json_depth_problem`` do the same for OTLP/JSON. A request over
  ``MAX_DECODE_COST`` is refused without being decoded.
* After decoding, before storing: ``enforce`` applies OpenTelemetry's span limits (the SDK's
  ``SpanLimits`` defaults: 128 attributes, events and links per span, 128 attributes per event and
  link) and bounds every string: what is over is cut, counted in OTLP's own ``dropped_*_count``
  fields and marked with ``gwtrace.truncated=true``, so nobody mistakes a cut span for a whole one.

The common case pays little (about 3 % of the server's CPU per batch): the spans that need a look are
found with C-level passes over their encoded bytes (sizes, tag counts), and only those are read.
"""

from __future__ import annotations

import array
from itertools import accumulate, compress, repeat
from operator import attrgetter, gt, methodcaller
from typing import Any, List, Optional, Sequence, Tuple

from google.protobuf.message import DecodeError

#: OpenTelemetry SDK SpanLimits defaults (opentelemetry-sdk ``trace/__init__.py``: 128 each).
MAX_ATTRIBUTES = 128          # per span, resource, scope, event and link
MAX_EVENTS = 128              # per span
MAX_LINKS = 128               # per span
#: span names, scope names and versions, in characters (span names are indexed: the operations)
MAX_NAME_CHARS = 1024
#: any other string (attribute keys and values, event names, status messages, trace state), in characters; bytes
#: values in bytes; an array or kvlist value keeps its leading elements up to this encoded size.
MAX_VALUE_BYTES = 8192
#: spans in one request (the SDK exports 512 at a time, a Collector 8192, a gwtrace block 4096)
MAX_SPANS_PER_REQUEST = 32768
#: ``decode_cost`` of one request (or of one trace read back); above it nothing is decoded
MAX_DECODE_COST = 64 << 20
#: ``json_cost`` of one OTLP/JSON request: lower, since decoding JSON is pure Python (about 5 s of CPU
#: per GB of estimate) and holds the interpreter while it runs
MAX_JSON_DECODE_COST = 16 << 20
#: nesting of an OTLP/JSON document (a span attribute sits at depth 10, each array value adds 3; well
#: within protobuf's own limit of 100 nested messages, past which a stored chunk could not be read)
MAX_JSON_DEPTH = 64

TRUNCATED_KEY = "gwtrace.truncated"

# Bytes that could open an OTLP submessage: a one-byte tag of wire type 2 (every message field of the
# OTLP trace messages has a number below 16; a longer tag is an unknown field, which upb keeps as
# raw bytes). Upper bounds of what upb allocates per submessage (measured: KeyValue 52, AnyValue 46,
# Event 60, Link 85, ScopeSpans 65, Span 177), Span's tag (field 2) on its own.
_OPENERS = bytes(range(0x0A, 0x80, 8))
_NOT_OPENERS = bytes(b for b in range(256) if b not in _OPENERS)
_SUBMESSAGE_COST = 96
_SPAN_COST = 192
# What json.loads and the protobuf message built from it take, per container and per string (measured:
# ~140 bytes per ``{}``), and for the text itself.
_JSON_CONTAINER_COST = 200
_JSON_STRING_COST = 64
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_BRACKET_STEPS = bytes.maketrans(b"[{]}", bytes((1, 1, 255, 255)))   # 255 is -1 as a signed byte

_ATTRIBUTES = attrgetter("attributes")
_EVENTS = attrgetter("events")
_LINKS = attrgetter("links")
_BYTE_SIZE = methodcaller("ByteSize")
# The tags of Span.attributes (0x4a), and of the rarer Span.events (0x5a), Span.links (0x6a),
# Event.attributes (0x1a) and Link.attributes (0x22): all length-delimited, so one byte each.
_RARE_TAGS = (b"\x5a", b"\x6a", b"\x1a", b"\x22")
_NOT_RARE_TAGS = bytes(b for b in range(256) if b not in b"\x5a\x6a\x1a\x22")


class TooLarge(ValueError):
    """A request over a limit that cutting cannot fix (too many spans, too costly to decode)."""


# --------------------------------------------------------------- before decoding


def decode_cost(raw: bytes) -> int:
    """An upper bound, in bytes, of the memory upb takes to decode ``raw`` (an encoded
    ExportTraceServiceRequest, ScopeSpans or TracesData).

    Every submessage is opened by a tag byte, so counting the bytes that could be one (with C-level
    ``translate``/``count``) bounds the number of submessages without decoding anything. Text and ids
    count too, so a real batch is over-estimated (about 8 times), never under.
    """
    openers = raw.translate(None, _NOT_OPENERS)
    return len(raw) + _SUBMESSAGE_COST * len(openers) + (_SPAN_COST - _SUBMESSAGE_COST) * openers.count(b"\x12")


def json_cost(body: bytes) -> int:
    """An upper bound of the memory ``json.loads`` and the message built from an OTLP/JSON body take."""
    containers = body.count(b"{") + body.count(b"[")
    return 2 * len(body) + _JSON_CONTAINER_COST * containers + _JSON_STRING_COST * (body.count(b'"') // 2)


def json_depth_problem(body: bytes, limit: int = MAX_JSON_DEPTH) -> Optional[str]:
    """Why ``body`` is nested too deep to decode, or None.

    ``json.loads`` recurses once per level (100,000 levels ended in ``RecursionError``, a 500).  The
    running depth of the brackets is computed with C-level passes (``translate`` to +1/-1, then
    ``accumulate``), 64 KiB at a time so that other threads get the interpreter in between, and it
    stops at the first level over ``limit``.  Brackets inside strings are counted too: that only
    errs on the safe side for real data (a string would need dozens of unmatched ``[``), and what a
    string could hide is caught by the decoders' own limits (``parse_request``).
    """
    steps = body.translate(None, _NOT_BRACKETS).translate(_BRACKET_STEPS)
    level = 0
    for at in range(0, len(steps), 1 << 16):
        piece = array.array("b", steps[at:at + (1 << 16)])
        if max(accumulate(piece, initial=level)) > limit:
            return f"JSON nested deeper than {limit} levels"
        level += sum(piece)
    return None


# --------------------------------------------------------------- after decoding


def enforce(request: Any, scope_raws: Optional[Sequence[Sequence[bytes]]] = None) -> int:
    """Cut what is over the limits in an ExportTraceServiceRequest, in place; return how many spans
    (and resources or scopes) were cut.

    ``scope_raws``: the encoded ScopeSpans when the caller has them (``chunks.request_slices`` of the
    request's own bytes): the spans that need a look are then found from their bytes with C-level
    passes, without reading each decoded span. Span names are the one thing not looked at here:
    ``chunks`` reads every name anyway and calls ``cut_names``. Raises ``TooLarge`` for more than
    MAX_SPANS_PER_REQUEST spans.
    """
    total = sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
    if total > MAX_SPANS_PER_REQUEST:
        raise TooLarge(f"{total} spans in one request; at most {MAX_SPANS_PER_REQUEST}: send smaller batches")
    cut = 0
    for ri, rs in enumerate(request.resource_spans):
        if _cut_holder(rs.resource):
            cut += 1
        for si, ss in enumerate(rs.scope_spans):
            if _cut_scope(ss.scope):
                cut += 1
            spans = ss.spans
            if not spans:
                continue
            looks = _looks_from_bytes(scope_raws[ri][si], len(spans)) if scope_raws is not None else None
            if looks is None:
                looks = _looks_from_messages(spans, ss.ByteSize() > MAX_VALUE_BYTES)
            for index, big in looks:
                if _cut_span(spans[index], big):
                    cut += 1
    return cut


def _looks_from_bytes(raw: bytes, n_spans: int) -> Optional[List[Tuple[int, bool]]]:
    """(index, could hold a value over the limit) of the spans of an encoded ScopeSpans that need a look;
    None when the bytes cannot tell (the caller then looks at the decoded spans).

    A span needs a look when it is bigger than MAX_VALUE_BYTES, or when its bytes hold more than
    MAX_ATTRIBUTES (= MAX_EVENTS = MAX_LINKS) bytes equal to the tag of its attributes, events or links,
    or of their attributes: with fewer it cannot have too many. Such a byte also occurs inside text and
    ids, so the counts err on the side of a look. Only spans of more than 2 * MAX_ATTRIBUTES bytes can
    have too many of anything, and the tags other than the attributes' are counted span by span only
    when the whole ScopeSpans holds enough of them. Every pass is C-level (``map``, ``compress``).
    """
    try:
        encoded = list(_span_bytes(raw))       # each element is made once: the passes below read the list
    except (DecodeError, AttributeError, TypeError):   # bytes that do not parse, or a protobuf without the
        return None                                     # look-alike's API: the decoded spans tell instead
    if len(encoded) != n_spans:
        return None
    sizes = list(map(len, encoded))
    if max(sizes) <= 2 * MAX_ATTRIBUTES:
        return []
    rare = raw.translate(None, _NOT_RARE_TAGS)
    tags = [b"\x4a"] + [tag for tag in _RARE_TAGS if rare.count(tag) > MAX_ATTRIBUTES]
    big = list(compress(encoded, map(gt, sizes, repeat(2 * MAX_ATTRIBUTES))))
    if max(sizes) <= MAX_VALUE_BYTES and all(max(map(bytes.count, big, repeat(tag))) <= MAX_ATTRIBUTES
                                             for tag in tags):
        return []
    return [(i, len(b) > MAX_VALUE_BYTES) for i, b in enumerate(encoded)
            if len(b) > MAX_VALUE_BYTES or any(b.count(tag) > MAX_ATTRIBUTES for tag in tags)]


def _looks_from_messages(spans: Sequence[Any], big: bool) -> List[Tuple[int, bool]]:
    """The same from the decoded spans (no bytes at hand): C-level passes over counts and sizes."""
    attrs = list(map(len, map(_ATTRIBUTES, spans)))
    events = list(map(len, map(_EVENTS, spans)))
    links = list(map(len, map(_LINKS, spans)))
    sizes = list(map(_BYTE_SIZE, spans)) if big else [0] * len(spans)
    return [(i, sizes[i] > MAX_VALUE_BYTES) for i in range(len(spans))
            if attrs[i] > MAX_ATTRIBUTES or events[i] or links[i] or sizes[i] > MAX_VALUE_BYTES]


def cut_names(spans: Sequence[Any]) -> int:
    """Span names over MAX_NAME_CHARS cut to it, those spans marked; how many."""
    cut = 0
    for span in spans:
        if len(span.name) > MAX_NAME_CHARS:
            span.name = span.name[:MAX_NAME_CHARS]
            _mark(span)
            cut += 1
    return cut


def _span_bytes_class() -> Any:
    """A look-alike of ScopeSpans whose spans are plain bytes: upb splits an encoded ScopeSpans into its
    encoded spans in C, so that their sizes and tag counts are C-level passes too."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    proto = descriptor_pb2.FileDescriptorProto(name="gwtrace/limits_lookalike.proto", package="gwtrace.limits")
    message = proto.message_type.add(name="ScopeSpanBytes")
    message.field.add(name="spans", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
                      label=descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("gwtrace.limits.ScopeSpanBytes"))


_SCOPE_SPAN_BYTES: Any = None


def _span_bytes(raw: bytes) -> Sequence[bytes]:
    global _SCOPE_SPAN_BYTES
    if _SCOPE_SPAN_BYTES is None:
        _SCOPE_SPAN_BYTES = _span_bytes_class()
    return _SCOPE_SPAN_BYTES.FromString(raw).spans


def _cut_span(span: Any, big: bool) -> bool:
    """Cut one span to the limits; mark it if anything was cut."""
    cut = False
    if len(span.events) > MAX_EVENTS:
        span.dropped_events_count += len(span.events) - MAX_EVENTS
        del span.events[MAX_EVENTS:]
        cut = True
    if len(span.links) > MAX_LINKS:
        span.dropped_links_count += len(span.links) - MAX_LINKS
        del span.links[MAX_LINKS:]
        cut = True
    for event in span.events:
        if big and len(event.name) > MAX_VALUE_BYTES:
            event.name = event.name[:MAX_VALUE_BYTES]
            cut = True
        cut = _cut_attributes(event, MAX_ATTRIBUTES, big) or cut
    for link in span.links:
        if big and len(link.trace_state) > MAX_VALUE_BYTES:
            link.trace_state = link.trace_state[:MAX_VALUE_BYTES]
            cut = True
        cut = _cut_attributes(link, MAX_ATTRIBUTES, big) or cut
    if big:
        if len(span.status.message) > MAX_VALUE_BYTES:
            span.status.message = span.status.message[:MAX_VALUE_BYTES]
            cut = True
        if len(span.trace_state) > MAX_VALUE_BYTES:
            span.trace_state = span.trace_state[:MAX_VALUE_BYTES]
            cut = True
    cut = _cut_attributes(span, MAX_ATTRIBUTES, big) or cut
    if cut:
        _mark(span)
    return cut


def _cut_holder(holder: Any) -> bool:
    """A Resource: its attributes to the limits, marked when cut."""
    big = holder.ByteSize() > MAX_VALUE_BYTES
    if len(holder.attributes) <= MAX_ATTRIBUTES and not big:
        return False
    cut = _cut_attributes(holder, MAX_ATTRIBUTES, big)
    if cut:
        _mark(holder)
    return cut


def _cut_scope(scope: Any) -> bool:
    """An InstrumentationScope: name, version and attributes to the limits."""
    if len(scope.attributes) <= MAX_ATTRIBUTES and scope.ByteSize() <= MAX_VALUE_BYTES:
        return False
    cut = False
    for name in ("name", "version"):
        if len(getattr(scope, name)) > MAX_NAME_CHARS:
            setattr(scope, name, getattr(scope, name)[:MAX_NAME_CHARS])
            cut = True
    cut = _cut_attributes(scope, MAX_ATTRIBUTES, True) or cut
    if cut:
        _mark(scope)
    return cut


def _cut_attributes(holder: Any, keep: int, big: bool) -> bool:
    """Keep ``holder``'s first ``keep`` attributes (counting the rest as dropped) and, when the holder is
    ``big`` enough to hold one, cut keys and values over MAX_VALUE_BYTES."""
    attributes = holder.attributes
    cut = False
    if len(attributes) > keep:
        if hasattr(holder, "dropped_attributes_count"):
            holder.dropped_attributes_count += len(attributes) - keep
        del attributes[keep:]
        cut = True
    if big:
        for kv in attributes:
            if len(kv.key) > MAX_VALUE_BYTES:
                kv.key = kv.key[:MAX_VALUE_BYTES]
                cut = True
            cut = _cut_value(kv.value) or cut
    return cut


def _cut_value(value: Any) -> bool:
    """A value over MAX_VALUE_BYTES cut to it: strings and bytes shortened, arrays and kvlists keep their
    leading elements (each one cut too) while they fit."""
    if value.ByteSize() <= MAX_VALUE_BYTES:
        return False
    which = value.WhichOneof("value")
    if which == "string_value":
        if len(value.string_value) <= MAX_VALUE_BYTES:
            return False      # long in bytes, not in characters: the limit counts characters
        value.string_value = value.string_value[:MAX_VALUE_BYTES]
        return True
    if which == "bytes_value":
        value.bytes_value = value.bytes_value[:MAX_VALUE_BYTES]
        return True
    if which in ("array_value", "kvlist_value"):
        items: List[Any] = value.array_value.values if which == "array_value" else value.kvlist_value.values
        used = 0
        for index, item in enumerate(items):
            _cut_value(item if which == "array_value" else item.value)
            used += item.ByteSize() + 3
            if used > MAX_VALUE_BYTES:
                del items[index:]
                break
        return True
    return False


def _mark(holder: Any) -> None:
    """``gwtrace.truncated=true`` on a cut span, resource or scope; it takes the last place, so the holder
    still has at most MAX_ATTRIBUTES attributes."""
    attributes = holder.attributes
    for kv in attributes:
        if kv.key == TRUNCATED_KEY:
            kv.value.bool_value = True
            return
    if len(attributes) >= MAX_ATTRIBUTES:
        holder.dropped_attributes_count += len(attributes) - MAX_ATTRIBUTES + 1
        del attributes[MAX_ATTRIBUTES - 1:]
    kv = attributes.add()
    kv.key = TRUNCATED_KEY
    kv.value.bool_value = True
