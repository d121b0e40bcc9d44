"""Just enough of the protobuf wire format to reuse encoded OTLP without re-encoding it.

Why: re-serializing every ScopeSpans of a request costs about as much as
decoding it.  The walker here finds the ScopeSpans inside an encoded
ExportTraceServiceRequest (two levels, never the spans), and ``spans_field``
frames one encoded Span so that concatenations give a valid ScopeSpans.
"""

from __future__ import annotations

from typing import Iterator, List, Tuple

from gwtrace.wire.protobuf import varint


def spans_field(serialized_span: bytes) -> bytes:
    """Wire encoding of one element of ``ScopeSpans.spans`` (field 2, length-delimited).

    Concatenating these after a serialized scope gives a valid ScopeSpans
    without copying Span messages in Python.
    """
    return b"\x12" + varint(len(serialized_span)) + serialized_span


def _read_varint(buf: bytes, pos: int) -> Tuple[int, int]:
    result = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _fields(buf: bytes, start: int, end: int) -> Iterator[Tuple[int, int, int, int]]:
    """(field number, wire type, value start, value end) of a message's top-level fields."""
    pos = start
    while pos < end:
        key, pos = _read_varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, nxt = _read_varint(buf, pos)
        elif wire == 1:
            nxt = pos + 8
        elif wire == 2:
            length, pos = _read_varint(buf, pos)
            nxt = pos + length
        elif wire == 5:
            nxt = pos + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if nxt > end:
            raise ValueError("truncated field")
        yield field, wire, pos, nxt
        pos = nxt


def scope_spans_slices(raw: bytes) -> List[List[bytes]]:
    """The serialized ScopeSpans of an encoded ExportTraceServiceRequest, per ResourceSpans.

    Only two levels of the wire format are walked (never the spans), so
    reusing these bytes is much cheaper than re-serializing the messages.
    """
    out: List[List[bytes]] = []
    for field, wire, start, end in _fields(raw, 0, len(raw)):
        if field == 1 and wire == 2:
            out.append([raw[s:e] for f, w, s, e in _fields(raw, start, end) if f == 2 and w == 2])
    return out
