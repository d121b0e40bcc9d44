# size: one class, the sidecar's life cycle: its reading and exporting halves share a lock and counters.
"""The sidecar: event log -> assembler -> outbox -> exporter.

Two threads. The main thread tails the event log, assembles spans, writes
finished spans to the outbox in batches and checkpoints (spool.py explains the
order that makes a SIGKILL harmless). The export thread delivers committed
batches and deletes them on success. A batch the collector could not take now
(connection refused, time-out, 429/502/503/504) stays and is retried with
exponential backoff or after its Retry-After; a batch the collector refuses
for good (other 4xx/5xx) is set aside and counted. The outbox is capped
(GWTRACE_OUTBOX_MAX_MB): past the cap the oldest batches are dropped, counted,
with one warning. A slow or dead collector never stalls reading.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Dict, List, Optional, TextIO

from opentelemetry.sdk.resources import Resource

from gwtrace.sidecar.assembler import Assembler, Counters, SpanRecord
from gwtrace.sidecar.eventlog import EventLogReader, create_event_log
from gwtrace.export.otlp import Delivery, Outcome, hashed_resource, to_readable_spans
from gwtrace.wire.events import parse_text
from gwtrace.sidecar.snapshot import Snapshotter, make_snapshotter
from gwtrace.sidecar.statedir import Checkpoint, Spool

log = logging.getLogger("gwtrace.sidecar.daemon")

BATCH_SPANS = 512
#: Log bytes read per step (~5000 spans of bench/throughput). With a backlog
#: (a sidecar started late, or behind), the first batches reach the export
#: thread after one step rather than after the whole backlog, the reader
#: parses while the exporter waits for the collector, and fewer lines are
#: held at once: a 20,000-span backlog drained 15% faster (median of 5)
#: with a 50 MB instead of a 60 MB peak RSS, against 4 MB steps.
STEP_BYTES = 1 << 20
#: Ready spans wait up to this long to fill a batch. Every batch and every
#: checkpoint is a file renamed into place, and on ext4 a rename over a file
#: flushes it (~1 ms each, measured): fewer of them is what keeps the sidecar
#: out of the payload's way.
FLUSH_INTERVAL_S = 0.5
POLL_MIN_S = 0.01
POLL_MAX_S = 0.1
#: status.json is rewritten at most this often, and only when a counter changed.
STATUS_INTERVAL_S = 1.0
RETRY_MIN_S = 1.0
RETRY_MAX_S = 30.0
DEFAULT_OUTBOX_MAX_MB = 200.0

#: Counters shown by ``gwtrace sidecar status`` even while zero.
STATUS_COUNTERS = (
    "events_received", "events_malformed", "events_unknown_span", "events_duplicate",
    "spans_finished", "spans_exported", "spans_retried", "spans_shipped", "spans_incomplete",
    "spans_dropped", "spans_rejected", "spans_dropped_outbox_cap", "spans_maybe_duplicated",
    "export_failures", "log_resets",
)


def now_us() -> int:
    return time.time_ns() // 1000


def outbox_cap_bytes() -> int:
    raw = os.environ.get("GWTRACE_OUTBOX_MAX_MB", "")
    try:
        mb = float(raw) if raw.strip() else DEFAULT_OUTBOX_MAX_MB
    except ValueError:
        log.warning("ignoring GWTRACE_OUTBOX_MAX_MB=%r: not a number", raw)
        mb = DEFAULT_OUTBOX_MAX_MB
    return max(0, int(mb * 1024 * 1024))


class Sidecar:
    """One sidecar owning one state directory."""

    def __init__(self, spool: Spool, delivery: Delivery, resource: Resource,
                 stop_timeout: float = 10.0, ship_to: Optional[TextIO] = None) -> None:
        self.spool = spool
        self.delivery = delivery
        self.resource = hashed_resource(resource)    # hashed once, not per exported span
        self.destination = delivery.destination
        self.stop_timeout = stop_timeout
        self.ship_to = ship_to
        self.outbox_cap = outbox_cap_bytes()
        self.counters = Counters()
        self.assembler = Assembler(self.counters)
        self.reader: Optional[EventLogReader] = None
        self.next_seq = 0
        self._ready: List[SpanRecord] = []      # finished, not yet in a batch
        self._ready_since = 0.0
        self._committed_seq = 0                   # batches below this may be exported
        self._committed_offset = -1
        self._committed_at = 0.0
        self._cache: Dict[int, List[SpanRecord]] = {}
        self._sizes: Dict[int, "tuple[int, int]"] = {}   # seq -> (spans, bytes) in the outbox
        self._exporting: Optional[int] = None
        self._inflight_at_start: set = set()
        self._cap_warned = False
        self._failing = ""                        # reason of the failures under way, "" if none
        self.last_error = ""                      # the last delivery failure, for a person
        self._unreachable_at_stop = threading.Event()
        self._lock = threading.Condition()
        self._stopping = threading.Event()
        self._export_done = threading.Event()
        self._retry_now = threading.Event()
        self._exporter_thread: Optional[threading.Thread] = None
        self._last_status = 0.0
        self._last_counters: object = None
        self.started_at = time.time()
        self.snapshots: Optional[Snapshotter] = None    # live snapshots of the open spans (snapshot.py)

    # -- life cycle ------------------------------------------------------------

    def open(self) -> None:
        """Take the directory over: lock it, load the checkpoint, drop what it doesn't cover."""
        self.spool.acquire()
        self.spool.save_resource(dict(self.resource.attributes))
        log_path = create_event_log(self.spool.dir)
        cp = self.spool.load_checkpoint()
        dropped = self.spool.discard_uncommitted(cp.next_seq)
        if dropped:
            log.info("discarded %d uncommitted batch(es); replaying from offset %d", dropped, cp.offset)
        self.counters.update(cp.counters)
        self.assembler.restore(cp.open_spans)
        self.reader = EventLogReader(log_path, cp.offset, cp.inode)
        self.next_seq = self._committed_seq = cp.next_seq
        self._committed_offset = cp.offset
        pending = self.spool.batch_seqs()
        self._inflight_at_start = {seq for seq in pending if self.spool.was_inflight(seq)}
        for seq in pending:
            try:
                self._sizes[seq] = (self.spool.batch_span_count(seq), os.path.getsize(self.spool.batch_path(seq)))
            except (OSError, ValueError, KeyError):
                self._set_aside(seq, "unreadable")
        if pending:
            log.info("%d undelivered span(s) in the outbox", self._outbox_spans())
        self._exporter_thread = threading.Thread(target=self._export_loop, name="gwtrace-export",
                                                 daemon=True)
        self._exporter_thread.start()
        self._start_snapshots()

    def _start_snapshots(self) -> None:
        """Live snapshots, if configured; trouble setting them up is logged and counted, never fatal."""
        try:
            self.snapshots, line = make_snapshotter(self.delivery, dict(self.resource.attributes), self.spool.dir)
            log.info("%s", line)
        except Exception as exc:  # noqa: BLE001
            self.counters.add("snapshot_failures")
            log.warning("live snapshots off: %s", exc)

    def _snapshot(self) -> None:
        """A snapshot of the open spans if one is due (this thread owns the table)."""
        assert self.snapshots is not None and self.reader is not None
        try:
            self.snapshots.maybe(self.assembler.open.values, self.reader.offset)
        except Exception as exc:  # noqa: BLE001 - never fatal: counted in status
            self.snapshots.counters["snapshot_failures"] += 1
            self.snapshots.last_error = f"{type(exc).__name__}: {exc}"

    def request_stop(self) -> None:
        self._stopping.set()
        with self._lock:
            self._lock.notify_all()

    def run(self) -> None:
        """Main loop until request_stop(); then drain, end open spans, flush."""
        poll = POLL_MIN_S
        while not self._stopping.is_set():
            n = self.step()
            if self.snapshots is not None:
                self._snapshot()
            self._maybe_status()
            if n:
                poll = POLL_MIN_S
            else:
                self._stopping.wait(poll)
                poll = min(POLL_MAX_S, poll * 2)
        self.shutdown()

    def shutdown(self) -> None:
        if self.snapshots is not None:
            self.snapshots.close()       # the real spans follow: no snapshot after this
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
        # Wait for delivery, but not for a collector that plainly is not
        # there (refused, bad URL): one attempt after the stop says so.
        if self.delivery.holds:
            self._unreachable_at_stop.set()
        while self.spool.batch_seqs() and time.monotonic() < deadline \
                and not self._unreachable_at_stop.is_set():
            time.sleep(0.02)
        if self.spool.batch_seqs() and self._unreachable_at_stop.is_set():
            log.warning("not waiting for %s (%s): %d span(s) stay in %s", self.destination, self.last_error,
                        self._outbox_spans(), self.spool.outbox_dir)
        self._export_done.set()
        self._retry_now.set()
        with self._lock:
            self._lock.notify_all()
        if self._exporter_thread is not None:
            self._exporter_thread.join(timeout=max(0.0, deadline - time.monotonic()) + 1
                                       if not self._unreachable_at_stop.is_set() else 1)
        if self.ship_to is not None and self.spool.batch_seqs():
            from gwtrace.wire.blocks import ship_outbox

            shipped = ship_outbox(self.spool, self.ship_to)
            with self._lock:
                self.counters.add("spans_shipped", shipped)
                self._sizes.clear()
        self._commit()
        status = self.status()
        self.spool.write_status(status)
        log.info("stopped: %s", format_counters(status))
        try:
            self.delivery.shutdown()
        except Exception:  # noqa: BLE001
            pass
        self.spool.release()

    # -- reading and assembling -------------------------------------------------

    def step(self, force_flush: bool = False) -> int:
        """Read what is new in the log; return the number of lines handled."""
        assert self.reader is not None
        lines, oversized = self.reader.read_lines(STEP_BYTES)
        ready = self._ready
        was_empty = not ready
        feed = self.assembler.feed
        malformed = finished = 0
        for raw in lines:
            try:
                # The reader already dropped lines over MAX_LINE_BYTES (parse_line's check).
                span = feed(parse_text(raw.decode("utf-8", "replace")), raw)
            except Exception:  # noqa: BLE001 - ProtocolError or worse: input must never kill the sidecar
                malformed += 1
                continue
            if span is not None:
                ready.append(span)
                finished += 1
        # Counted once per read, not per line: the counters are a dict
        # subclass, and two updates per event were a tenth of the parse cost.
        counters = self.counters
        if lines:
            counters.add("events_received", len(lines) - malformed)
        if malformed or oversized:
            counters.add("events_malformed", malformed + oversized)
        if finished:
            counters.add("spans_finished", finished)
            if was_empty:
                self._ready_since = time.monotonic()
        if self.reader.resets:
            counters.add("log_resets", self.reader.resets)
            self.reader.resets = 0
        self._flush(force=force_flush)
        return len(lines) + oversized

    def _flush(self, force: bool = False) -> None:
        """Move ready spans into outbox batches and checkpoint the offset."""
        if not self._ready:
            # Only events of spans still open: checkpoint the offset now and then.
            if self.reader is not None and self._committed_offset != self.reader.offset and \
                    (force or time.monotonic() - self._committed_at >= FLUSH_INTERVAL_S):
                self._commit()
            return
        if not force and len(self._ready) < BATCH_SPANS and \
                time.monotonic() - self._ready_since < FLUSH_INTERVAL_S:
            return
        while self._ready:
            batch, self._ready = self._ready[:BATCH_SPANS], self._ready[BATCH_SPANS:]
            size = self.spool.write_batch(self.next_seq, batch)
            self._cache[self.next_seq] = batch
            with self._lock:
                self._sizes[self.next_seq] = (len(batch), size)
            self.next_seq += 1
        self._commit()
        self._enforce_cap()

    def _commit(self) -> None:
        assert self.reader is not None
        with self._lock:
            counters = dict(self.counters)
        self.spool.save_checkpoint(Checkpoint(
            offset=self.reader.offset, inode=self.reader.inode, next_seq=self.next_seq,
            open_spans=self.assembler.snapshot(), counters=counters))
        self._committed_offset = self.reader.offset
        self._committed_at = time.monotonic()
        with self._lock:
            self._committed_seq = self.next_seq
            self._lock.notify_all()

    def _enforce_cap(self) -> None:
        """Drop the oldest batches while the outbox is over GWTRACE_OUTBOX_MAX_MB."""
        with self._lock:
            total = sum(size for _, size in self._sizes.values())
            if total <= self.outbox_cap:
                return
            for seq in sorted(self._sizes):
                if total <= self.outbox_cap:
                    break
                if seq == self._exporting:
                    continue
                spans, size = self._sizes.pop(seq)
                self._cache.pop(seq, None)
                self.spool.remove_batch(seq)
                total -= size
                self.counters.add("spans_dropped", spans)
                self.counters.add("spans_dropped_outbox_cap", spans)
            if not self._cap_warned:
                self._cap_warned = True
                log.warning("outbox over GWTRACE_OUTBOX_MAX_MB=%.0f: dropping the oldest undelivered "
                            "spans (counted as spans_dropped_outbox_cap)", self.outbox_cap / 1048576)

    # -- exporting ----------------------------------------------------------------

    def _next_batch(self) -> Optional[int]:
        for seq in sorted(self._sizes):
            if seq < self._committed_seq:
                return seq
        return None

    def _export_loop(self) -> None:
        backoff = RETRY_MIN_S
        if self.delivery.holds:            # ship-home only: batches wait for the stop
            self._export_done.wait()
            return
        while not self._export_done.is_set():
            with self._lock:
                seq = self._next_batch()
                if seq is None:
                    self._lock.wait(0.2)
                    continue
                self._exporting = seq
            try:
                outcome = self._export_batch(seq)
            finally:
                with self._lock:
                    self._exporting = None
            if outcome is None or outcome.delivered or not outcome.retryable:
                backoff = RETRY_MIN_S
                continue
            # Retry later: after Retry-After if the collector said so, else
            # exponential backoff; a stop request cuts the wait short once.
            wait = outcome.retry_after if outcome.retry_after is not None else backoff
            if self._stopping.is_set():
                wait = min(wait, 1.0)      # the stop window is short: use all of it
            self._retry_now.wait(wait)
            self._retry_now.clear()
            backoff = min(RETRY_MAX_S, backoff * 2)

    def _export_batch(self, seq: int) -> Optional[Outcome]:
        spans = self._cache.pop(seq, None)
        if spans is None:
            try:
                spans = self.spool.read_batch(seq)
            except FileNotFoundError:          # dropped by the cap meanwhile
                return None
            except (OSError, ValueError, KeyError) as exc:
                log.error("unreadable outbox batch %d set aside: %s", seq, exc)
                self._set_aside(seq, "unreadable")
                return None
        resent = seq in self._inflight_at_start
        self.spool.mark_inflight(seq)
        outcome = self.delivery.send(to_readable_spans(spans, self.resource))
        with self._lock:
            if outcome.delivered:
                self.spool.remove_batch(seq)
                self._sizes.pop(seq, None)
                self.counters.add("spans_exported", len(spans))
                if resent:
                    self.counters.add("spans_maybe_duplicated", len(spans))
            elif not outcome.retryable:
                log.error("collector refused %d span(s) (%s): set aside in %s", len(spans),
                          outcome.reason, self.spool.outbox_dir)
                self._set_aside(seq, outcome.reason)
                self.counters.add("spans_rejected", len(spans))
                self.counters.add("spans_dropped", len(spans))
            else:
                self.counters.add("export_failures")
                self.counters.add("spans_retried", len(spans))
                if seq in self._sizes:
                    self._cache[seq] = spans
        self._note(outcome)
        return outcome

    def _note(self, outcome: Outcome) -> None:
        """One log line when delivery starts failing, changes reason or works
        again (not one per attempt); the last failure for ``sidecar status``;
        and, once stopping, an unreachable collector ends the wait (shutdown)."""
        if outcome.delivered:
            if self._failing:
                log.info("delivering to %s again", self.destination)
            self._failing = self.last_error = ""
            return
        if not outcome.retryable:
            return
        if outcome.reason != self._failing:
            log.warning("cannot deliver to %s: %s; spans wait in the outbox and are retried "
                        "(export_failures counts the attempts)", self.destination, outcome.message or outcome.reason)
        self._failing = outcome.reason
        self.last_error = outcome.message or outcome.reason
        if outcome.unreachable and self._stopping.is_set():
            self._unreachable_at_stop.set()

    def _set_aside(self, seq: int, reason: str) -> None:
        self.spool.set_aside(seq, reason)
        self._sizes.pop(seq, None)
        self.counters.add(f"batches_set_aside_{reason}")

    # -- status ---------------------------------------------------------------------

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
        counters["log_bytes_unread"] = self.reader.pending_bytes() if self.reader else 0
        return {
            "pid": os.getpid(), "dir": self.spool.dir, "destination": self.destination,
            "started": self.started_at, "updated": time.time(),
            "running": not self._stopping.is_set(), "counters": counters,
            "last_error": self.last_error,
            "last_snapshot_error": snapshots.last_error if snapshots is not None else "",
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
