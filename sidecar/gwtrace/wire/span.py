"""The span model every layer shares: a span as gwtrace knows it.

The sidecar assembles these from event lines, the exporter turns them into
OTLP, the factory and journey code build them from HTCondor's records. It
lives at the bottom (``gwtrace.wire``) so that each of those may import it
without importing the daemon that assembles them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Dict, List, Optional, Tuple

from gwtrace.wire.events import AttrValue


@dataclass
class SpanRecord:
    """A span as gwtrace knows it: what the exporter turns into OTLP."""

    trace_id: str
    span_id: str
    parent_id: str
    parent_remote: bool
    flags: int
    tracestate: str
    name: str
    start_us: int
    pid: int
    end_us: int = 0
    status: str = "unset"            # "unset", "ok" or "error"
    status_message: str = ""
    attributes: Dict[str, AttrValue] = field(default_factory=dict)
    events: List[Tuple[str, int, Dict[str, AttrValue]]] = field(default_factory=list)
    dropped_attributes: int = 0
    dropped_events: int = 0
    #: The event-log lines this span was assembled from, in order, while
    #: they are all known (None otherwise: restored from a checkpoint, ended
    #: by end_all, fed without lines, or more than MAX_SPAN_LINES). The
    #: outbox journals these instead of the span's fields: a join of bytes
    #: the reader already holds, against encoding every field (spool.py).
    lines: Optional[List[bytes]] = field(default=None, compare=False, repr=False)

    def to_json(self) -> Dict[str, Any]:
        """A compact, JSON-safe dict (checkpoints; outbox files of version 1)."""
        return {
            "t": self.trace_id, "s": self.span_id, "p": self.parent_id,
            "r": self.parent_remote, "f": self.flags, "ts": self.tracestate,
            "n": self.name, "b": self.start_us, "e": self.end_us, "pid": self.pid,
            "st": self.status, "sm": self.status_message, "a": self.attributes,
            "ev": [[n, t, a] for n, t, a in self.events],
            "da": self.dropped_attributes, "de": self.dropped_events,
        }

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "SpanRecord":
        return cls(
            trace_id=d["t"], span_id=d["s"], parent_id=d["p"], parent_remote=d["r"],
            flags=d["f"], tracestate=d["ts"], name=d["n"], start_us=d["b"],
            pid=d["pid"], end_us=d["e"], status=d["st"], status_message=d["sm"],
            attributes=dict(d["a"]), events=[(n, t, dict(a)) for n, t, a in d["ev"]],
            dropped_attributes=d.get("da", 0), dropped_events=d.get("de", 0),
        )

    @classmethod
    def from_row(cls, row: List[Any]) -> "SpanRecord":
        """The inverse of ``to_row`` (after a JSON round trip: arrays for tuples)."""
        if len(row) != len(ROW_FIELDS):
            raise ValueError(f"span row of {len(row)} fields, expected {len(ROW_FIELDS)}")
        return cls(*row[:12], attributes=dict(row[12]), events=[(n, t, dict(a)) for n, t, a in row[13]],
                   dropped_attributes=row[14], dropped_events=row[15])


#: The fields of a span row (outbox files of version 2), in order. Same
#: content as ``to_json`` but positional: no key to encode per field, and
#: the tuple is built in C (``to_row``), so journaling a batch costs about
#: half as much. Changing this order or these names needs a new outbox version.
ROW_FIELDS = ("trace_id", "span_id", "parent_id", "parent_remote", "flags", "tracestate", "name", "start_us",
              "pid", "end_us", "status", "status_message", "attributes", "events", "dropped_attributes",
              "dropped_events")
#: ``to_row(span)``: the span as a tuple of ROW_FIELDS.
to_row = attrgetter(*ROW_FIELDS)
