"""Wire format of the event log (docs/protocol.md), version 1.

One event per line, fields separated by TAB, written by bash/gwtrace.sh:

    gw1 B <ts> <pid> <trace_id> <span_id> <parent|-> <remote> <flags> <tracestate|-> <name> [k=v...]
    gw1 E <ts> <pid> <trace_id> <span_id> <status> [k=v...]
    gw1 V <ts> <pid> <trace_id> <span_id> <name> [k=v...]
    gw1 A <ts> <pid> <trace_id> <span_id> [k=v...]

``ts`` is seconds.microseconds since the epoch (``1700000000.123456``; a
comma is accepted as the decimal mark) or plain microseconds.
Text fields escape backslash, TAB, LF and CR as ``\\\\ \\t \\n \\r``. The parser
is strict about ids and numbers (a bad line is rejected whole and counted by
the caller) and lenient about text (invalid UTF-8 is replaced, not fatal),
because the input comes from arbitrary scripts and must never kill the sidecar.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, NamedTuple, Optional, Tuple, Union

PROTOCOL_TAG = b"gw1"

#: Longest line accepted; the library keeps its lines below 4096 bytes.
MAX_LINE_BYTES = 65536

AttrValue = Union[str, int, bool]

_HEX = frozenset("0123456789abcdef")
_INT_RE = re.compile(r"-?(?:0|[1-9][0-9]{0,17})\Z")
_UNESCAPE_RE = re.compile(r"\\(.)", re.S)
_UNESCAPES = {"t": "\t", "n": "\n", "r": "\r", "\\": "\\"}


class ProtocolError(ValueError):
    """A line that is not a valid version-1 event."""


class Event(NamedTuple):
    """One parsed line. ``kind`` is B, E, V or A; unused fields are empty."""

    kind: str
    ts_us: int
    pid: int
    trace_id: str
    span_id: str
    parent_id: str = ""          # B: "" for a root span
    parent_remote: bool = False  # B: parent came through TRACEPARENT
    flags: int = 1               # B: W3C trace flags
    tracestate: str = ""         # B
    name: str = ""               # B: span name, V: event name
    status: str = ""             # E: "<int>", "ok", "error" or "error:<message>"
    attributes: Tuple[Tuple[str, AttrValue], ...] = ()


def unescape(text: str) -> str:
    """Undo the library's escaping; an unknown escape keeps its character."""
    if "\\" not in text:
        return text
    return _UNESCAPE_RE.sub(lambda m: _UNESCAPES.get(m.group(1), m.group(1)), text)


def escape(text: str) -> str:
    """The library's escaping, for producers written in Python."""
    return (text.replace("\\", "\\\\").replace("\t", "\\t")
            .replace("\n", "\\n").replace("\r", "\\r"))


def typed_value(text: str) -> AttrValue:
    """Canonical integers and true/false become typed OTLP values.

    Only forms that print back identically are converted, so a value always
    arrives intact: ``8`` is an int, ``08``, ``1.10`` and ``1e3`` stay strings.
    """
    if text == "true":
        return True
    if text == "false":
        return False
    if text and (text[0].isdigit() or text[0] == "-") and _INT_RE.match(text):
        return int(text)
    return text


def parse_attributes(fields: List[str]) -> Tuple[Tuple[str, AttrValue], ...]:
    """``k=v`` fields into (key, value) pairs; a bare word is a flag (true).

    Values are typed by typed_value, except under keys ending in ``.name``
    (``process.executable.name=true`` names the command ``true``).
    """
    out = []
    for field in fields:
        key, sep, value = field.partition("=")
        key = unescape(key)
        if not key:
            continue
        if not sep:
            out.append((key, True))
        elif key.endswith(".name"):
            out.append((key, unescape(value)))      # names stay text: a command named `true`
        else:
            out.append((key, typed_value(unescape(value))))
    return tuple(out)


def is_hex_id(text: str, length: int) -> bool:
    """Lower-case hex of exactly ``length`` digits and not all zero (W3C)."""
    return len(text) == length and _HEX.issuperset(text) and text.strip("0") != ""


def _int_field(text: str, what: str) -> int:
    if not text.isdigit() or len(text) > 19:
        raise ProtocolError(f"bad {what}: {text[:40]!r}")
    return int(text)


def _ts_field(text: str) -> int:
    """Microseconds since the epoch, written as ``S.UUUUUU`` (bash's
    EPOCHREALTIME, either decimal mark) or as plain microseconds."""
    sec, sep, frac = text.replace(",", ".").partition(".")
    if sep:
        if not sec.isdigit() or not frac.isdigit() or len(frac) > 6 or len(sec) > 12:
            raise ProtocolError(f"bad timestamp: {text[:40]!r}")
        return int(sec) * 1_000_000 + int(frac.ljust(6, "0"))
    return _int_field(text, "timestamp")


def parse_line(raw: bytes) -> Event:
    """Parse one line (without its newline) or raise ProtocolError."""
    if len(raw) > MAX_LINE_BYTES:
        raise ProtocolError("line too long")
    fields = raw.decode("utf-8", "replace").split("\t")
    if len(fields) < 7 or fields[0] != "gw1":
        raise ProtocolError("not a gw1 event")
    kind = fields[1]
    ts_us = _ts_field(fields[2])
    pid = _int_field(fields[3], "pid")
    trace_id, span_id = fields[4], fields[5]
    if not is_hex_id(trace_id, 32) or not is_hex_id(span_id, 16):
        raise ProtocolError("bad trace or span id")
    if kind == "B":
        if len(fields) < 11:
            raise ProtocolError("short begin event")
        parent = fields[6]
        if parent == "-":
            parent = ""
        elif not is_hex_id(parent, 16):
            raise ProtocolError("bad parent span id")
        flags = fields[8]
        if len(flags) != 2 or not _HEX.issuperset(flags):
            raise ProtocolError("bad trace flags")
        state = fields[9]
        return Event("B", ts_us, pid, trace_id, span_id, parent, fields[7] == "1",
                     int(flags, 16), "" if state == "-" else unescape(state),
                     unescape(fields[10]), "", parse_attributes(fields[11:]))
    if kind == "E":
        status = fields[6]
        if not (status.isdigit() or status in ("ok", "error") or status.startswith("error:")):
            raise ProtocolError("bad status")
        return Event("E", ts_us, pid, trace_id, span_id, status=status,
                     attributes=parse_attributes(fields[7:]))
    if kind == "V":
        return Event("V", ts_us, pid, trace_id, span_id, name=unescape(fields[6]),
                     attributes=parse_attributes(fields[7:]))
    if kind == "A":
        return Event("A", ts_us, pid, trace_id, span_id, attributes=parse_attributes(fields[6:]))
    raise ProtocolError(f"unknown event kind {kind[:8]!r}")


def format_event(kind: str, ts_us: int, pid: int, trace_id: str, span_id: str,
                 *fields: str, attributes: Optional[Dict[str, Any]] = None) -> bytes:
    """Build a line the way the bash library does (for Python producers and tests)."""
    parts = ["gw1", kind, str(ts_us), str(pid), trace_id, span_id]
    parts.extend(fields)
    for key, value in (attributes or {}).items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        parts.append(escape(f"{key}={value}"))
    return ("\t".join(parts) + "\n").encode("utf-8")
