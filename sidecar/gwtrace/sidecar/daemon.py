"""The sidecar: event log -> assembler -> outbox -> exporter; its life cycle.

Two threads. The main thread tails the event log, assembles spans, writes
finished spans to the outbox in batches and checkpoints (reading.py;
statedir.py explains the order that makes a SIGKILL harmless). The export
thread (delivering.py) delivers committed
batches and deletes them on success. A batch the collector could not take now
(connection refused, time-out, 429/502/503/504) stays and is retried with
exponential backoff or after its Retry-After; a batch the collector refuses
for good (other 4xx/5xx) is set aside and counted. The outbox is capped
(GWTRACE_OUTBOX_MAX_MB): past the cap the oldest batches are dropped, counted,
with one warning. A slow or dead collector never stalls reading.

The two halves and the status report (status.py) are mixins of the one
``Sidecar`` class because they share its lock, counters and outbox table;
this module keeps what joins them: opening the directory, the main loop and
the stop.
"""

from __future__ import annotations

import logging
import os
import select
import threading
import time
from typing import Dict, List, Optional, TextIO

from opentelemetry.sdk.resources import Resource

from gwtrace.export.otlp import Delivery, hashed_resource
from gwtrace.export.resource import GlideinIdentity
from gwtrace.sidecar.assembler import Assembler, Counters
from gwtrace.wire.span import SpanRecord
from gwtrace.sidecar.channels import JobChannels, make_jobs_dir
from gwtrace.sidecar.failure import FailureNotes, make_stderr_dir
from gwtrace.sidecar.delivering import DeliveryHalf
from gwtrace.sidecar.enforce import DroppedSpans, Policy
from gwtrace.sidecar.eventlog import EventLogReader, create_event_log
from gwtrace.sidecar.gone import CHECK_INTERVAL_S, GoneProcesses
from gwtrace.sidecar.reading import ReadingHalf
from gwtrace.sidecar.resources import ResourceMonitor, start_resource_monitor
from gwtrace.sidecar.ship import ship_outbox
from gwtrace.sidecar.snapshot import Snapshotter, make_snapshotter
from gwtrace.sidecar.statedir import Spool
from gwtrace.sidecar.status import STATUS_COUNTERS, StatusHalf, format_counters

__all__ = ["Sidecar", "now_us", "outbox_cap_bytes", "format_counters", "STATUS_COUNTERS"]

log = logging.getLogger("gwtrace.sidecar.daemon")

POLL_MIN_S = 0.01
POLL_MAX_S = 0.1
DEFAULT_OUTBOX_MAX_MB = 200.0
#: The stop reads what is left of the log for at most this long (~1 GB of
#: lines at the sidecar's throughput, far more of junk).
DRAIN_MAX_S = 60.0


def _wake_pipe() -> "tuple[int, int]":
    """The self-pipe request_stop() writes to: non-blocking both ends, closed on exec."""
    r, w = os.pipe()
    for fd in (r, w):
        os.set_blocking(fd, False)
    return r, w


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


class Sidecar(ReadingHalf, DeliveryHalf, StatusHalf):
    """One sidecar owning one state directory: its life cycle (the halves are in reading.py,
    delivering.py and status.py)."""

    def __init__(self, spool: Spool, delivery: Delivery, resource: Resource,
                 stop_timeout: float = 10.0, ship_to: Optional[TextIO] = None,
                 identity: Optional[GlideinIdentity] = None) -> None:
        self.spool = spool
        self.delivery = delivery
        self.resource = hashed_resource(resource)    # hashed once, not per exported span
        self.identity = identity                      # glidein_config, read again when it changes
        self.destination = delivery.destination
        self.stop_timeout = stop_timeout
        self.ship_to = ship_to
        self.outbox_cap = outbox_cap_bytes()
        self.counters = Counters()
        self.assembler = Assembler(self.counters)
        self.reader: Optional[EventLogReader] = None
        self.channels: Optional[JobChannels] = None     # user jobs' event logs (channels.py)
        self.failures = FailureNotes(None)               # error spans' exception events (failure.py)
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
        self._stopping = threading.Event()       # set by the main thread once its loop ends
        self._stop_requested = False             # set by request_stop (a signal handler)
        self._wake_r, self._wake_w = _wake_pipe()
        self._export_done = threading.Event()
        self._retry_now = threading.Event()
        self._exporter_thread: Optional[threading.Thread] = None
        self._last_status = 0.0
        self._last_counters: object = None
        self.started_at = time.time()
        self.snapshots: Optional[Snapshotter] = None    # live snapshots of the open spans (snapshot.py)
        self.gone = GoneProcesses()               # bash processes replaced by exec (gone.py)
        self.resources: Optional[ResourceMonitor] = None   # what the glidein and jobs use (resources.py)
        self._gone_at = 0.0
        self.policy = Policy()                    # the controller's decisions, enforced (enforce.py)
        self._dropped = DroppedSpans()

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
        make_jobs_dir(self.spool.dir)
        make_stderr_dir(self.spool.dir)
        self.failures = FailureNotes(self.spool.dir)
        self.channels = JobChannels(self.spool.dir, cp.channels)
        self.next_seq = self._committed_seq = cp.next_seq
        self._committed_offset = self._position()
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
        self._start_resources()

    def _start_snapshots(self) -> None:
        """Live snapshots, if configured; trouble setting them up is logged and counted, never fatal."""
        try:
            self.snapshots, line = make_snapshotter(self.delivery, dict(self.resource.attributes), self.spool.dir,
                                                    policy=self.policy)
            log.info("%s", line)
        except Exception as exc:  # noqa: BLE001
            self.counters.add("snapshot_failures")
            log.warning("live snapshots off: %s", exc)

    def _start_resources(self) -> None:
        """The resource sampler (resources.py), unless GWTRACE_RESOURCE_INTERVAL=0; never fatal."""
        config = self.identity.path if self.identity is not None else None
        self.resources = start_resource_monitor(self.spool.dir, config, self.delivery,
                                                lambda: dict(self.resource.attributes))

    def _snapshot(self) -> None:
        """A snapshot of the open spans if one is due (this thread owns the table)."""
        assert self.snapshots is not None and self.reader is not None
        try:
            self.snapshots.maybe(self.assembler.open.values, self.reader.offset)
        except Exception as exc:  # noqa: BLE001 - never fatal: counted in status
            self.snapshots.counters["snapshot_failures"] += 1
            self.snapshots.last_error = f"{type(exc).__name__}: {exc}"

    def _end_gone(self) -> None:
        """End the spans of traced bash processes that are gone without their EXIT trap (gone.py)."""
        self._gone_at = time.monotonic() + CHECK_INTERVAL_S
        dead = self.gone.dead(self.assembler)
        if not dead:
            return
        while self.step():                  # what they wrote before they died comes first
            pass
        done = self.gone.end(self.assembler, dead, now_us())
        if done:
            self.counters.add("spans_finished", len(done))
            if not self._ready:
                self._ready_since = time.monotonic()
            self._ready.extend(done)

    def request_stop(self) -> None:
        """Ask the main loop to stop. Safe in a signal handler: it takes no lock.

        Python runs a handler in the main thread between two bytecodes, which
        may be inside a ``with lock:`` of that same thread (Event.wait holds
        its Condition's lock on its way in and out): a handler that took a
        lock could wait for itself for ever. So this only sets a flag and
        writes a byte to the wake pipe, which the main loop's select() sees.
        """
        self._stop_requested = True
        try:
            os.write(self._wake_w, b"x")
        except OSError:             # full (a stop is already pending) or closed: the flag is enough
            pass

    def _sleep(self, seconds: float) -> None:
        """Wait up to ``seconds`` or until request_stop()."""
        try:
            ready, _, _ = select.select([self._wake_r], [], [], seconds)
        except (OSError, ValueError):
            time.sleep(min(seconds, POLL_MAX_S))
            return
        if ready:
            try:
                while os.read(self._wake_r, 512):
                    pass
            except OSError:         # drained (EAGAIN)
                pass

    def run(self) -> None:
        """Main loop until request_stop(); then drain, end open spans, flush."""
        poll = POLL_MIN_S
        while not self._stop_requested:
            n = self.step()
            if self.snapshots is not None:
                self._snapshot()
            self._maybe_status()
            self.refresh_identity()
            if n:
                poll = POLL_MIN_S
            else:
                if time.monotonic() >= self._gone_at:
                    self._end_gone()
                if self._stop_requested:
                    break
                self._sleep(poll)
                poll = min(POLL_MAX_S, poll * 2)
        self._stopping.set()         # from the main thread: the export thread and status() read it
        with self._lock:
            self._lock.notify_all()
        self.shutdown()

    def refresh_identity(self) -> None:
        """The resource again, if the glidein's identity changed since (the
        entry's constants, CPUs and memory arrive after an early set-up)."""
        resource = self.identity.changed() if self.identity is not None else None
        if resource is not None:
            self.resource = hashed_resource(resource)
            self.spool.save_resource(dict(self.resource.attributes))

    def _drain(self) -> None:
        """Read the log to its end before the stop ends what is open.

        Bounded: up to the size the log had when the drain began and what is
        appended meanwhile, for at most DRAIN_MAX_S (a script that never stops
        writing cannot hold the stop for ever). What is left unread stays in
        the log (``log_bytes_unread``): the directory is then kept."""
        assert self.reader is not None
        deadline = time.monotonic() + DRAIN_MAX_S
        while self.step(force_flush=True):
            if time.monotonic() > deadline:
                log.warning("stop: %d byte(s) of the event log left unread after %.0f s",
                            self.reader.pending_bytes(), DRAIN_MAX_S)
                break

    def shutdown(self) -> None:
        self.refresh_identity()
        if self.snapshots is not None:
            self.snapshots.close()       # the real spans follow: no snapshot after this
        self._drain()
        self._end_gone()
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
            shipped = ship_outbox(self.spool, self.ship_to)
            with self._lock:
                self.counters.add("spans_shipped", shipped)
                self._sizes.clear()
        if self.resources is not None:      # its last round; what is left rides home (--ship-to) or is counted
            self.resources.finish(self.ship_to, min(self.stop_timeout, 5.0))
        self._commit()
        status = self.status()
        self.spool.write_status(status)
        log.info("stopped: %s", format_counters(status))
        try:
            self.delivery.shutdown()
        except Exception:  # noqa: BLE001
            pass
        self.spool.release()

