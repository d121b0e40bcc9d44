# size: Assembler.feed is ~64 lines: the per-event hot path, kept inline (a call per event costs measurably).
"""Turns begin/end/event/attribute events into finished spans.

The assembler keeps the table of open spans. It is deliberately free of I/O so
that its state can be checkpointed (``snapshot``/``restore``) and replayed
after a crash, and so that the same code serves the live sidecar and
``gwtrace ingest`` of a spool.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional, Tuple

from gwtrace.wire.events import AttrValue, Event, ProtocolError, parse_text, unescape
from gwtrace.wire.span import SpanRecord

#: Attributes a span may carry; more are counted as dropped (OTel's default is 128).
MAX_ATTRIBUTES = 128
#: On a bash process's span when an accelerator was shipped but not verified for its bash binary
#: (gwtrace-auto.sh; gwtrace/shim/accel.py): counted as bash_accel_unverified.
ACCEL_ATTRIBUTE = "gwtrace.accel"
#: Events a span may carry.
MAX_EVENTS = 256
#: Lines kept per span for the outbox journal; a span with more is
#: journaled by its fields (its lines would cost memory while it is open).
MAX_SPAN_LINES = 512

SpanKey = Tuple[str, str]


class Counters(dict):
    """Named counters that read as zero until first incremented."""

    def __missing__(self, key: str) -> int:
        return 0

    def add(self, key: str, n: int = 1) -> None:
        self[key] = self[key] + n


class Assembler:
    """Open-span table. ``feed`` returns the spans an event finished."""

    def __init__(self, counters: Optional[Counters] = None) -> None:
        self.open: Dict[SpanKey, SpanRecord] = {}
        self.counters = counters if counters is not None else Counters()

    def feed(self, ev: Event, raw: Optional[bytes] = None) -> Optional[SpanRecord]:
        """Apply one event; return the span it finished, if any.

        ``raw`` is the line the event was parsed from: a span all of whose
        lines are known keeps them (SpanRecord.lines) for the outbox journal.
        Runs once per event on the sidecar's hot path: the common cases (a
        begin with few attributes, an end with an exit code) skip the general
        helpers.
        """
        kind = ev.kind
        key = (ev.trace_id, ev.span_id)
        if kind == "B":
            if key in self.open:
                self.counters.add("events_duplicate")
                return None
            attrs = ev.attributes
            few = len(attrs) <= MAX_ATTRIBUTES
            span = SpanRecord(ev.trace_id, ev.span_id, ev.parent_id, ev.parent_remote, ev.flags, ev.tracestate,
                              ev.name, ev.ts_us, ev.pid, 0, "unset", "", dict(attrs) if few else {}, [], 0, 0,
                              None if raw is None else [raw])
            if not few:
                _set_attributes(span, attrs)
            if ACCEL_ATTRIBUTE in span.attributes:
                self.counters.add("bash_accel_unverified")
            self.open[key] = span
            return None
        if kind == "E":
            span = self.open.pop(key, None)
            if span is None:
                self.counters.add("events_unknown_span")
                return None
            if ev.attributes:
                _set_attributes(span, ev.attributes)
            ts_us = ev.ts_us
            span.end_us = ts_us if ts_us > span.start_us else span.start_us
            status = ev.status
            if status == "0":
                span.attributes["process.exit.code"] = 0
                span.status = "ok"
            else:
                _apply_status(span, status)
            lines = span.lines
            if lines is not None:
                if raw is None:
                    span.lines = None
                else:
                    lines.append(raw)
            return span
        span = self.open.get(key)
        if span is None:
            # An event or attribute for a span we never saw begin.
            self.counters.add("events_unknown_span")
            return None
        if kind == "A":
            _set_attributes(span, ev.attributes)
            if any(k == ACCEL_ATTRIBUTE for k, _ in ev.attributes):     # a bash that `gwtrace run` ran
                self.counters.add("bash_accel_unverified")
        elif len(span.events) >= MAX_EVENTS:
            span.dropped_events += 1
        else:
            span.events.append((ev.name, ev.ts_us, dict(ev.attributes)))
        lines = span.lines
        if lines is not None:
            if raw is None or len(lines) >= MAX_SPAN_LINES - 1:     # keep room for the end
                span.lines = None
            else:
                lines.append(raw)
        return None

    def end_all(self, now_us: int, reason: str,
                keep: Optional[Callable[[SpanRecord], bool]] = None) -> List[SpanRecord]:
        """End open spans (all, or those ``keep`` rejects) as incomplete errors.

        Used at sidecar stop and for spans whose process is known to be gone:
        an unfinished span is still a fact worth exporting, flagged so that
        nobody mistakes its end time for the real one.
        """
        done = []
        for key, span in list(self.open.items()):
            if keep is not None and keep(span):
                continue
            del self.open[key]
            span.lines = None          # ended here, not by a line: journaled by its fields
            span.end_us = max(now_us, span.start_us)
            span.status = "error"
            span.status_message = f"span not ended: {reason}"
            span.attributes["gwtrace.incomplete"] = True
            span.attributes["gwtrace.incomplete_reason"] = reason
            done.append(span)
        if done:
            self.counters.add("spans_incomplete", len(done))
        return done

    def snapshot(self) -> List[Dict[str, Any]]:
        return [span.to_json() for span in self.open.values()]

    def restore(self, spans: List[Dict[str, Any]]) -> None:
        self.open = {}
        for d in spans:
            span = SpanRecord.from_json(d)
            self.open[(span.trace_id, span.span_id)] = span


def replay(lines: List[str]) -> List[SpanRecord]:
    """The spans that the given event lines (all of them, each span's from
    begin to end) assemble into: the inverse of journaling SpanRecord.lines.

    Raises ValueError if a line does not parse or a span stays open: the
    lines were accepted once, so the journal is damaged.
    """
    asm = Assembler()
    done = []
    for text in lines:
        try:
            span = asm.feed(parse_text(text))
        except ProtocolError as exc:
            raise ValueError(f"journaled line does not parse: {exc}") from None
        if span is not None:
            done.append(span)
    anomalies = {k: n for k, n in asm.counters.items() if k != "bash_accel_unverified"}   # that one is not
    if asm.open or anomalies:
        raise ValueError(f"journaled lines leave {len(asm.open)} span(s) open, {anomalies}")
    return done


def _set_attributes(span: SpanRecord, attrs: Tuple[Tuple[str, AttrValue], ...]) -> None:
    for key, value in attrs:
        if key not in span.attributes and len(span.attributes) >= MAX_ATTRIBUTES:
            span.dropped_attributes += 1
            continue
        span.attributes[key] = value


def _apply_status(span: SpanRecord, status: str) -> None:
    if status == "ok":
        span.status = "ok"
    elif status == "error":
        span.status = "error"
    elif status.startswith("error:"):
        span.status = "error"
        span.status_message = unescape(status[6:])
    else:
        code = int(status)
        span.attributes["process.exit.code"] = code
        if code == 0:
            span.status = "ok"
        else:
            span.status = "error"
            span.status_message = f"exit code {code}"


def pid_alive(pid: int) -> bool:
    """True unless the process is certainly gone (EPERM means it exists)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True
