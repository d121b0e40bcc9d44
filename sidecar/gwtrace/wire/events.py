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

from gwtrace.wire.redact import hinted as _hinted
from gwtrace.wire.redact import redact_message, redact_value

PROTOCOL_TAG = b"gw1"

#: Longest line accepted; the library keeps its lines below 4096 bytes.
MAX_LINE_BYTES = 65536

AttrValue = Union[str, int, bool]

_HEX = frozenset("0123456789abcdef")
_INT_RE = re.compile(r"-?(?:0|[1-9][0-9]{0,17})\Z")
_INT_FIRST = frozenset("-0123456789")
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
    if text and text[0] in _INT_FIRST and _INT_RE.match(text):
        return int(text)
    return text


def parse_attributes(fields: List[str]) -> Tuple[Tuple[str, AttrValue], ...]:
    """``k=v`` fields into (key, value) pairs; a bare word is a flag (true).

    Secrets are redacted here, whatever the producer did (redact.py): every
    way into a span (event log, outbox replay, ingest) parses its lines here.
    Values are typed by typed_value, except under keys ending in ``.name``
    (``process.executable.name=true`` names the command ``true``). This runs
    for every attribute of every event, so unescape and typed_value are
    inlined for the common case (no backslash, not a canonical number).
    """
    out = []
    for field in fields:
        key, sep, value = field.partition("=")
        if "\\" in key:
            key = unescape(key)
            field = key + "=" + value
        if not key:
            continue
        if not sep:
            out.append((key, True))
            continue
        if "\\" in value:
            value = unescape(value)
            field = key + "=" + value
        # The sidecar's backstop for producers that did not redact (redact.py).
        if _hinted(field):
            redacted = redact_value(key, value)
            if redacted is not value:
                out.append((key, redacted))
                continue
        # Only a value that would be typed needs the key's test: names stay
        # text (`process.executable.name=true` is a command named `true`).
        if value == "true":
            out.append((key, True if not key.endswith(".name") else value))
        elif value == "false":
            out.append((key, False if not key.endswith(".name") else value))
        elif value.isdigit():
            # ASCII, no leading zero, int64: the canonical forms (isdigit
            # alone would take "²" and other Unicode digits).
            out.append((key, int(value) if value.isascii() and (value[0] != "0" or len(value) == 1)
                        and len(value) <= 18 and not key.endswith(".name") else value))
        elif value[:1] == "-" and _INT_RE.match(value) and not key.endswith(".name"):
            out.append((key, int(value)))
        else:
            out.append((key, value))
    return tuple(out)


def redact_status(status: str) -> str:
    """A wire status with its message redacted (redact.py, the value rule):
    ``error:<escaped message>``; the other statuses hold no text."""
    if len(status) <= 6 or not status.startswith("error:"):
        return status
    message = unescape(status[6:])
    redacted = redact_message(message)
    return status if redacted == message else "error:" + escape(redacted)


def is_hex_id(text: str, length: int) -> bool:
    """Lower-case hex of exactly ``length`` digits and not all zero (W3C)."""
    return len(text) == length and _HEX.issuperset(text) and text.strip("0") != ""


# The fixed part of every line. Numbers are ASCII digits: ``\\d`` would also
# take other Unicode decimals, which no producer writes.
_TS = r"(?:([0-9]{1,12})[.,]([0-9]{1,6})|([0-9]{1,19}))"
_IDS = r"\t([0-9]{1,19})\t([0-9a-f]{32})\t([0-9a-f]{16})"
_HEAD_RE = re.compile(r"gw1\t([BEVA])\t" + _TS + _IDS + r"(?:\t|\Z)")
_ZERO_TRACE = "0" * 32
_ZERO_SPAN = "0" * 16
_SPAN_ID_RE = re.compile(r"[0-9a-f]{16}\Z")
_FLAGS_RE = re.compile(r"[0-9a-f]{2}\Z")
#: An exit code is at most 18 digits: it becomes an OTLP int (int64), and
#: int() of a longer or non-ASCII "digit" string must not reach the assembler.
_STATUS_RE = re.compile(r"(?:[0-9]{1,18}|ok|error|error:.*)\Z", re.S)

# Whole well-formed lines, one regex per kind: the sidecar's hot path checks
# every field of the common line in one match. A line they do not match goes
# through _parse_fields, which accepts the same language (the fast forms are
# a subset of it) and says what is wrong.
_FAST_RE = {
    "B": re.compile(r"gw1\tB\t" + _TS + _IDS
                    + r"\t(-|[0-9a-f]{16})\t([^\t]*)\t([0-9a-f]{2})\t([^\t]*)\t([^\t]*)(?:\t(.*))?\Z", re.S),
    "E": re.compile(r"gw1\tE\t" + _TS + _IDS + r"\t([0-9]{1,18}|ok|error|error:[^\t]*)(?:\t(.*))?\Z", re.S),
    "V": re.compile(r"gw1\tV\t" + _TS + _IDS + r"\t([^\t]+)(?:\t(.*))?\Z", re.S),
    "A": re.compile(r"gw1\tA\t" + _TS + _IDS + r"(?:\t(.*))?\Z", re.S),
}
_new_event = tuple.__new__       # Event(...) without the Python-level __new__ frame
_FAST_B = _FAST_RE["B"].match
_FAST_E = _FAST_RE["E"].match


def parse_line(raw: bytes) -> Event:
    """Parse one line (without its newline) or raise ProtocolError."""
    if len(raw) > MAX_LINE_BYTES:
        raise ProtocolError("line too long")
    return parse_text(raw.decode("utf-8", "replace"))


def parse_text(text: str) -> Event:
    """Parse one decoded line whose length was already checked (by the event
    log reader, or when it was first read: outbox replay) or raise ProtocolError."""
    kind = text[4:5]
    if kind == "B":
        m = _FAST_B(text)
        if m is None:
            return _parse_fields(text)
        sec, frac, plain, pid, trace_id, span_id, parent, remote, flags, state, name, rest = m.groups()
        if trace_id == _ZERO_TRACE or span_id == _ZERO_SPAN:
            raise ProtocolError("all-zero trace or span id")
        if parent == "-":
            parent = ""
        elif parent == _ZERO_SPAN:
            raise ProtocolError("bad parent span id")
        if state == "-":
            state = ""
        elif "\\" in state:
            state = unescape(state)
        if "\\" in name:
            name = unescape(name)
        # bash 5's $EPOCHREALTIME always has 6 decimals: one int() for the common case
        ts_us = int(sec + frac) if frac is not None and len(frac) == 6 else _ts_us(sec, frac, plain)
        return _new_event(Event, ("B", ts_us, int(pid), trace_id, span_id, parent, remote == "1", int(flags, 16),
                                  state, name, "", parse_attributes(rest.split("\t")) if rest else ()))
    if kind == "E":
        m = _FAST_E(text)
        if m is None:
            return _parse_fields(text)
        sec, frac, plain, pid, trace_id, span_id, status, rest = m.groups()
        if trace_id == _ZERO_TRACE or span_id == _ZERO_SPAN:
            raise ProtocolError("all-zero trace or span id")
        if len(status) > 6:
            status = redact_status(status)      # the backstop, for messages
        ts_us = int(sec + frac) if frac is not None and len(frac) == 6 else _ts_us(sec, frac, plain)
        return _new_event(Event, ("E", ts_us, int(pid), trace_id, span_id, "", False, 1, "", "", status,
                                  parse_attributes(rest.split("\t")) if rest else ()))
    fast = _FAST_RE.get(kind)
    m = fast.match(text) if fast is not None else None
    if m is None:
        return _parse_fields(text)
    g = m.groups()
    trace_id, span_id = g[4], g[5]
    if trace_id == _ZERO_TRACE or span_id == _ZERO_SPAN:
        raise ProtocolError("all-zero trace or span id")
    rest = g[-1]
    attrs = parse_attributes(rest.split("\t")) if rest else ()
    if kind == "V":
        return _new_event(Event, ("V", _ts_us(g[0], g[1], g[2]), int(g[3]), trace_id, span_id, "", False, 1, "",
                                  unescape(g[6]), "", attrs))
    return _new_event(Event, ("A", _ts_us(g[0], g[1], g[2]), int(g[3]), trace_id, span_id, "", False, 1, "", "", "",
                              attrs))


def _ts_us(sec: Optional[str], frac: Optional[str], plain: Optional[str]) -> int:
    """Microseconds from the timestamp's groups: seconds and fraction, or plain."""
    if sec is not None and frac is not None:
        return int(sec) * 1_000_000 + int(frac.ljust(6, "0"))
    return int(plain) if plain is not None else 0      # the regex gives one form or the other


def _parse_fields(text: str) -> Event:
    """Field by field: lines the fast forms do not take (empty event names
    followed by attributes, ...) and, for a bad line, the reason."""
    m = _HEAD_RE.match(text)
    if m is None:
        raise ProtocolError(_diagnose(text))
    kind, sec, frac, plain, pid, trace_id, span_id = m.groups()
    if trace_id == _ZERO_TRACE or span_id == _ZERO_SPAN:
        raise ProtocolError("all-zero trace or span id")
    ts_us = int(sec) * 1_000_000 + int(frac.ljust(6, "0")) if sec is not None else int(plain)
    rest = text[m.end():].split("\t") if m.end() < len(text) else []
    if kind == "B":
        if len(rest) < 5:
            raise ProtocolError("short begin event")
        parent, remote, flags, state, name = rest[0], rest[1], rest[2], rest[3], rest[4]
        if parent == "-":
            parent = ""
        elif not _SPAN_ID_RE.match(parent) or parent == _ZERO_SPAN:
            raise ProtocolError("bad parent span id")
        if not _FLAGS_RE.match(flags):
            raise ProtocolError("bad trace flags")
        return Event("B", ts_us, int(pid), trace_id, span_id, parent, remote == "1", int(flags, 16),
                     "" if state == "-" else unescape(state), unescape(name), "",
                     parse_attributes(rest[5:]) if len(rest) > 5 else ())
    if kind == "E":
        if not rest:
            raise ProtocolError("short end event")
        status = rest[0]
        if not _STATUS_RE.match(status):
            raise ProtocolError("bad status")
        status = redact_status(status)
        return Event("E", ts_us, int(pid), trace_id, span_id, "", False, 1, "", "", status,
                     parse_attributes(rest[1:]) if len(rest) > 1 else ())
    if kind == "V":
        if not rest:
            raise ProtocolError("short event record")
        return Event("V", ts_us, int(pid), trace_id, span_id, "", False, 1, "", unescape(rest[0]), "",
                     parse_attributes(rest[1:]))
    return Event("A", ts_us, int(pid), trace_id, span_id, "", False, 1, "", "", "", parse_attributes(rest))


def _diagnose(text: str) -> str:
    """Why the fixed part of a line did not match (for the counters' sake, cheap)."""
    fields = text.split("\t", 7)
    if len(fields) < 7 or fields[0] != "gw1":
        return "not a gw1 event"
    if fields[1] not in ("B", "E", "V", "A"):
        return f"unknown event kind {fields[1][:8]!r}"
    if not is_hex_id(fields[4], 32) or not is_hex_id(fields[5], 16):
        return "bad trace or span id"
    return "bad timestamp or pid"


#: Longest line a producer writes, newline included: one write(2) of one
#: printf in bash (docs/protocol.md). Counted in characters; a line with any
#: non-ASCII character gets a quarter as many (at most 4 bytes each), as bash
#: counts characters, not bytes.
WRITE_LINE_BYTES = 4000
TRUNCATED = "gwtrace.truncated=true"
#: Only this much of a ``key=value`` is ever looked at (redaction) or written.
FIELD_CHARS = 8192
#: Only this much of a status message is looked at (redaction) or written
#: (bash/gwtrace.sh cuts a message there before it escapes it).
MESSAGE_CHARS = 4096


def format_event(kind: str, ts_us: int, pid: int, trace_id: str, span_id: str,
                 *fields: str, attributes: Optional[Dict[str, Any]] = None) -> bytes:
    """Build a line exactly as the bash library does (tests/test_conformance.py
    holds them equal): secrets redacted (redact.py), long values cut to fit the
    line (fit_fields), a line still too long cut whole (shrink_line)."""
    parts = ["gw1", kind, str(ts_us), str(pid), trace_id, span_id]
    parts.extend(fields)
    if kind == "E" and fields and fields[0].startswith("error:"):
        # bash looks at (and writes) a message's first MESSAGE_CHARS characters.
        parts[6] = redact_status("error:" + escape(unescape(fields[0][6:])[:MESSAGE_CHARS]))
    attrs = []
    for key, value in (attributes or {}).items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        field = f"{key}={value}"[:FIELD_CHARS]
        key, _, value = field.partition("=")
        attrs.append(escape(f"{key}={redact_value(key, value)}"))
    head = "\t".join(parts)
    return (shrink_line("\t".join([head] + fit_fields(head, attrs))) + "\n").encode("utf-8")


def _line_limit(text: str) -> int:
    return WRITE_LINE_BYTES if text.isascii() else WRITE_LINE_BYTES // 4


def fit_fields(head: str, fields: List[str], limit: int = WRITE_LINE_BYTES) -> List[str]:
    """``fields`` (escaped ``key=value``), the longest values cut so that
    ``head`` and they fit the line, every attribute kept (as bash/gwtrace.sh
    ``_gwtrace_fit`` does, to the character): each gets an equal share of the
    room, the short ones give theirs to the rest. A cut field keeps its key
    and a prefix of its value; TRUNCATED is added."""
    if limit == WRITE_LINE_BYTES:
        limit = _line_limit(head + " ".join(fields))
    if len(head) + sum(len(f) + 1 for f in fields) <= limit:
        return fields
    left = limit - len(head) - len(TRUNCATED) - 2
    cut = list(range(len(fields)))
    share = 0
    more = True
    while more and cut:
        more = False
        share = int(left / len(cut)) - 1          # bash's integer division: towards zero
        fits = [i for i in cut if len(fields[i]) <= share]
        if fits:
            more = True
            left -= sum(len(fields[i]) + 1 for i in fits)
            cut = [i for i in cut if i not in fits]
    share = max(share, 8)
    out = list(fields)
    for i in cut:
        key = fields[i].partition("=")[0]
        text = fields[i][:max(len(key) + 1, share)]
        if (len(text) - len(text.rstrip("\\"))) % 2:
            text = text[:-1]                      # never end inside an escape
        out[i] = text
    return out + [TRUNCATED]


def shrink_line(line: str) -> str:
    """A line still over the limit (a long name or status) cut whole, as bash's
    ``_gwtrace_shrink`` does: it drops one trailing backslash and adds TRUNCATED."""
    limit = _line_limit(line)
    if len(line) <= limit:
        return line
    line = line[:limit]
    if line.endswith("\\"):
        line = line[:-1]
    return line + "\t" + TRUNCATED
