"""What ``gwtrace sidecar status`` shows: the counters, the outbox, the last errors.

The sidecar writes status.json from its main thread, at most every
STATUS_INTERVAL_S and only when a counter changed; the CLI reads that file.
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from gwtrace.sidecar.assembler import Assembler, Counters

from gwtrace.wire.span import SpanRecord
from gwtrace.sidecar.channels import JobChannels
from gwtrace.sidecar.eventlog import EventLogReader
from gwtrace.sidecar.statedir import Spool
from gwtrace.wire.redact import strip_userinfo

if TYPE_CHECKING:   # the snapshot code pulls in protobuf: `sidecar stop` only formats counters
    from gwtrace.sidecar.snapshot import Snapshotter

#: status.json is rewritten at most this often, and only when a counter changed.
STATUS_INTERVAL_S = 1.0

#: Counters shown by ``gwtrace sidecar status`` even while zero.
STATUS_COUNTERS = (
    "events_received", "events_malformed", "events_unknown_span", "events_duplicate", "events_rejected_job",
    "spans_finished", "spans_exported", "spans_retried", "spans_shipped", "spans_incomplete",
    "spans_dropped", "spans_rejected", "spans_dropped_outbox_cap", "spans_maybe_duplicated",
    "export_failures", "log_resets", "bash_accel_unverified",
    "spans_dropped_control",
)


class StatusHalf:
    """The status report of a sidecar (mixed into daemon.Sidecar)."""

    spool: Spool
    destination: str
    counters: Counters
    assembler: Assembler
    reader: Optional[EventLogReader]
    channels: Optional[JobChannels]
    snapshots: Optional[Snapshotter]
    started_at: float
    last_error: str
    _ready: List[SpanRecord]
    _sizes: Dict[int, Tuple[int, int]]
    _lock: threading.Condition
    _stopping: threading.Event
    _last_status: float
    _last_counters: object

    def _outbox_spans(self) -> int:
        return sum(n for n, _ in self._sizes.values())

    def status(self) -> Dict[str, object]:
        with self._lock:
            counters = {name: self.counters[name] for name in STATUS_COUNTERS}
            counters.update(self.counters)
            counters["spans_pending"] = self._outbox_spans() + len(self._ready)
            counters["outbox_bytes"] = sum(size for _, size in self._sizes.values())
        counters["spans_open"] = len(self.assembler.open)
        snapshots = self.snapshots
        if snapshots is not None:
            counters.update(snapshots.counters)
        resources = getattr(self, "resources", None)       # the resource sampler (resources.py)
        if resources is not None:
            counters.update(resources.status())
        counters["log_bytes_unread"] = (self.reader.pending_bytes() if self.reader else 0) + \
            (self.channels.pending_bytes() if self.channels is not None else 0)
        return {
            "pid": os.getpid(), "dir": self.spool.dir, "destination": self.destination,
            "started": self.started_at, "updated": time.time(),
            "running": not self._stopping.is_set(), "counters": counters,
            "last_error": strip_userinfo(self.last_error),
            "last_snapshot_error": strip_userinfo(snapshots.last_error) if snapshots is not None else "",
            "last_resource_error": strip_userinfo(resources.last_error) if resources is not None else "",
        }

    def _maybe_status(self) -> None:
        now = time.monotonic()
        if now - self._last_status >= STATUS_INTERVAL_S:
            self._last_status = now
            status = self.status()
            if status["counters"] != self._last_counters:
                self._last_counters = status["counters"]
                self.spool.write_status(status)


def format_counters(status: Dict[str, object]) -> str:
    """The one-line summary: what was delivered, retried, shipped, dropped and why."""
    counters = status.get("counters", {})
    assert isinstance(counters, dict)
    keys = ("events_received", "events_malformed", "spans_exported", "spans_retried", "spans_shipped",
            "spans_pending", "spans_open", "spans_incomplete", "spans_dropped", "spans_rejected",
            "spans_dropped_outbox_cap", "spans_maybe_duplicated", "log_bytes_unread")
    return " ".join(f"{k}={counters.get(k, 0)}" for k in keys)
