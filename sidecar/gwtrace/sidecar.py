"""The sidecar: event log -> assembler -> outbox -> exporter.

Two threads. The main thread tails the event log, assembles spans, writes
finished spans to the outbox in batches and checkpoints (spool.py explains the
order that makes a SIGKILL harmless). The export thread delivers committed
batches and deletes them on success; a failed batch stays in the outbox and
is retried with backoff, so a slow or dead collector never stalls reading and
never costs a span.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Dict, List, Optional

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from .assembler import Assembler, Counters, SpanRecord
from .eventlog import EventLogReader, create_event_log
from .exporter import to_readable_spans
from .protocol import ProtocolError, parse_line
from .spool import Checkpoint, Spool

log = logging.getLogger("gwtrace.sidecar")

BATCH_SPANS = 512
FLUSH_INTERVAL_S = 0.2
POLL_MIN_S = 0.01
POLL_MAX_S = 0.1
STATUS_INTERVAL_S = 0.25
RETRY_MIN_S = 1.0
RETRY_MAX_S = 30.0

#: Counters shown by ``gwtrace sidecar status`` even while zero.
STATUS_COUNTERS = (
    "events_received", "events_malformed", "events_unknown_span", "events_duplicate",
    "spans_finished", "spans_exported", "spans_incomplete", "spans_dropped",
    "export_failures", "spans_maybe_duplicated", "log_resets",
)


def now_us() -> int:
    return time.time_ns() // 1000


class Sidecar:
    """One sidecar owning one state directory."""

    def __init__(self, spool: Spool, exporter: SpanExporter, resource: Resource,
                 destination: str, stop_timeout: float = 10.0) -> None:
        self.spool = spool
        self.exporter = exporter
        self.resource = resource
        self.destination = destination
        self.stop_timeout = stop_timeout
        self.counters = Counters()
        self.assembler = Assembler(self.counters)
        self.reader: Optional[EventLogReader] = None
        self.next_seq = 0
        self._ready: List[SpanRecord] = []      # finished, not yet in a batch
        self._ready_since = 0.0
        self._committed_seq = 0                   # batches below this may be exported
        self._cache: Dict[int, List[SpanRecord]] = {}
        self._lock = threading.Condition()
        self._stopping = threading.Event()
        self._export_done = threading.Event()
        self._retry_now = threading.Event()
        self._outbox_spans = 0
        self._inflight_at_start: set = set()
        self._committed_offset = -1
        self._exporter_thread: Optional[threading.Thread] = None
        self._last_status = 0.0
        self.started_at = time.time()

    # -- life cycle ------------------------------------------------------------

    def open(self) -> None:
        """Take the directory over: lock it, load the checkpoint, drop what it doesn't cover."""
        self.spool.acquire()
        log_path = create_event_log(self.spool.dir)
        cp = self.spool.load_checkpoint()
        dropped = self.spool.discard_uncommitted(cp.next_seq)
        if dropped:
            log.info("discarded %d uncommitted batch(es); replaying from offset %d", dropped, cp.offset)
        self.counters.update(cp.counters)
        self.assembler.restore(cp.open_spans)
        self.reader = EventLogReader(log_path, cp.offset, cp.inode)
        self.next_seq = self._committed_seq = cp.next_seq
        pending = self.spool.batch_seqs()
        self._inflight_at_start = {seq for seq in pending if self.spool.was_inflight(seq)}
        for seq in pending:
            try:
                self._outbox_spans += len(self.spool.read_batch(seq))
            except (OSError, ValueError, KeyError):
                self._set_aside(seq)
        if pending:
            log.info("%d undelivered span(s) in the outbox", self._outbox_spans)
        self._committed_offset = cp.offset
        self._exporter_thread = threading.Thread(target=self._export_loop, name="gwtrace-export",
                                                 daemon=True)
        self._exporter_thread.start()

    def request_stop(self) -> None:
        self._stopping.set()
        with self._lock:
            self._lock.notify_all()

    def run(self) -> None:
        """Main loop until request_stop(); then drain, end open spans, flush."""
        poll = POLL_MIN_S
        while not self._stopping.is_set():
            n = self.step()
            self._maybe_status()
            if n:
                poll = POLL_MIN_S
            else:
                self._stopping.wait(poll)
                poll = min(POLL_MAX_S, poll * 2)
        self.shutdown()

    def shutdown(self) -> None:
        while self.step(force_flush=True):
            pass
        incomplete = self.assembler.end_all(now_us(), "sidecar stopped")
        if incomplete:
            log.warning("%d span(s) still open at stop, ended as incomplete", len(incomplete))
            self.counters.add("spans_finished", len(incomplete))
            self._ready.extend(incomplete)
        self._flush(force=True)
        deadline = time.monotonic() + self.stop_timeout
        self._retry_now.set()
        while self.spool.batch_seqs() and time.monotonic() < deadline:
            time.sleep(0.02)
        self._export_done.set()
        self._retry_now.set()
        with self._lock:
            self._lock.notify_all()
        if self._exporter_thread is not None:
            self._exporter_thread.join(timeout=max(0.0, deadline - time.monotonic()) + 1)
        self._commit()
        status = self.status()
        self.spool.write_status(status)
        log.info("stopped: %s", format_counters(status))
        try:
            self.exporter.shutdown()
        except Exception:  # noqa: BLE001
            pass
        self.spool.release()

    # -- reading and assembling -------------------------------------------------

    def step(self, force_flush: bool = False) -> int:
        """Read what is new in the log; return the number of lines handled."""
        assert self.reader is not None
        lines, oversized = self.reader.read_lines()
        if oversized:
            self.counters.add("events_malformed", oversized)
        for raw in lines:
            try:
                ev = parse_line(raw)
            except ProtocolError:
                self.counters.add("events_malformed")
                continue
            except Exception:  # noqa: BLE001 - input must never kill the sidecar
                self.counters.add("events_malformed")
                continue
            self.counters.add("events_received")
            span = self.assembler.feed(ev)
            if span is not None:
                self.counters.add("spans_finished")
                if not self._ready:
                    self._ready_since = time.monotonic()
                self._ready.append(span)
        if self.reader.resets:
            self.counters.add("log_resets", self.reader.resets)
            self.reader.resets = 0
        self._flush(force=force_flush or not lines)
        return len(lines) + oversized

    def _flush(self, force: bool = False) -> None:
        """Move ready spans into outbox batches and checkpoint the offset."""
        if not self._ready:
            if force and self.reader is not None and self._checkpoint_stale():
                self._commit()
            return
        if not force and len(self._ready) < BATCH_SPANS and \
                time.monotonic() - self._ready_since < FLUSH_INTERVAL_S:
            return
        while self._ready:
            batch, self._ready = self._ready[:BATCH_SPANS], self._ready[BATCH_SPANS:]
            self.spool.write_batch(self.next_seq, batch)
            self._cache[self.next_seq] = batch
            with self._lock:
                self._outbox_spans += len(batch)
            self.next_seq += 1
        self._commit()

    def _checkpoint_stale(self) -> bool:
        assert self.reader is not None
        return self._committed_offset != self.reader.offset

    def _commit(self) -> None:
        assert self.reader is not None
        with self._lock:
            counters = dict(self.counters)
        self.spool.save_checkpoint(Checkpoint(
            offset=self.reader.offset, inode=self.reader.inode, next_seq=self.next_seq,
            open_spans=self.assembler.snapshot(), counters=counters))
        self._committed_offset = self.reader.offset
        with self._lock:
            self._committed_seq = self.next_seq
            self._lock.notify_all()

    # -- exporting ----------------------------------------------------------------

    def _next_batch(self) -> Optional[int]:
        for seq in self.spool.batch_seqs():
            if seq < self._committed_seq:
                return seq
        return None

    def _export_loop(self) -> None:
        backoff = RETRY_MIN_S
        while not self._export_done.is_set():
            with self._lock:
                seq = self._next_batch()
                if seq is None:
                    self._lock.wait(0.2)
                    continue
            spans = self._cache.pop(seq, None)
            if spans is None:
                try:
                    spans = self.spool.read_batch(seq)
                except (OSError, ValueError, KeyError) as exc:
                    log.error("unreadable outbox batch %d set aside: %s", seq, exc)
                    self._set_aside(seq)
                    continue
            resent = self.spool.was_inflight(seq) and seq in self._inflight_at_start
            self.spool.mark_inflight(seq)
            if self._export(spans) == SpanExportResult.SUCCESS:
                self.spool.remove_batch(seq)
                with self._lock:
                    self.counters.add("spans_exported", len(spans))
                    if resent:
                        self.counters.add("spans_maybe_duplicated", len(spans))
                    self._outbox_spans -= len(spans)
                backoff = RETRY_MIN_S
                continue
            with self._lock:
                self.counters.add("export_failures")
            self._cache[seq] = spans
            # Sleep before the retry; a stop request cuts the wait short once.
            self._retry_now.wait(backoff)
            self._retry_now.clear()
            backoff = min(RETRY_MAX_S, backoff * 2)

    def _export(self, spans: List[SpanRecord]) -> SpanExportResult:
        try:
            return self.exporter.export(to_readable_spans(spans, self.resource))
        except Exception as exc:  # noqa: BLE001 - exporter bugs must not stop delivery
            log.error("export raised %s: %s", type(exc).__name__, exc)
            return SpanExportResult.FAILURE

    def _set_aside(self, seq: int) -> None:
        src = self.spool.batch_path(seq)
        try:
            os.replace(src, src + ".bad")
        except OSError:
            pass
        with self._lock:
            self.counters.add("batches_unreadable")

    # -- status ---------------------------------------------------------------------

    def status(self) -> Dict[str, object]:
        with self._lock:
            counters = {name: self.counters[name] for name in STATUS_COUNTERS}
            counters.update(self.counters)
        counters["spans_pending"] = self._outbox_spans + len(self._ready)
        counters["spans_open"] = len(self.assembler.open)
        counters["log_bytes_unread"] = self.reader.pending_bytes() if self.reader else 0
        return {
            "pid": os.getpid(), "dir": self.spool.dir, "destination": self.destination,
            "started": self.started_at, "updated": time.time(),
            "running": not self._stopping.is_set(), "counters": counters,
        }

    def _maybe_status(self) -> None:
        now = time.monotonic()
        if now - self._last_status >= STATUS_INTERVAL_S:
            self._last_status = now
            self.spool.write_status(self.status())


def format_counters(status: Dict[str, object]) -> str:
    counters = status.get("counters", {})
    assert isinstance(counters, dict)
    keys = ("events_received", "events_malformed", "spans_exported", "spans_pending",
            "spans_open", "spans_incomplete", "spans_dropped", "log_bytes_unread")
    return " ".join(f"{k}={counters.get(k, 0)}" for k in keys)
