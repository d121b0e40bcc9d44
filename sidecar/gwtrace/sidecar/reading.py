"""The sidecar's reading half: event log -> assembler -> outbox batches -> checkpoint.

Runs in the main thread (daemon.py). Ready spans become batch files, then the
checkpoint records the log offset and the next batch number: a batch exists
before the checkpoint that covers it, so a SIGKILL anywhere loses nothing and
duplicates nothing (statedir.py). The export thread only sees batches below
``_committed_seq``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Dict, List, Optional, Tuple

from gwtrace.export.otlp import SERVICE_KEY
from gwtrace.sidecar.assembler import Assembler, Counters
from gwtrace.wire.span import SpanRecord
from gwtrace.sidecar.channels import JobChannels
from gwtrace.sidecar.enforce import DroppedSpans, Policy, Verdict, allowed, span_kind
from gwtrace.sidecar.eventlog import EventLogReader
from gwtrace.sidecar.failure import REGISTERED, FailureNotes
from gwtrace.sidecar.statedir import Checkpoint, Spool
from gwtrace.wire.events import Event, parse_text

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

#: The service name of user jobs' spans (the job wrapper's ``user_job`` span and all a job adds under it):
#: ``GWTRACE_JOB_SERVICE_NAME`` in the sidecar's environment, else this (docs/journey.md).
DEFAULT_JOB_SERVICE = "user-job"


def job_service_name() -> str:
    """The configured service name of job spans (at most 128 characters, printable)."""
    value = os.environ.get("GWTRACE_JOB_SERVICE_NAME", "").strip()[:128]
    return value if value and value.isprintable() else DEFAULT_JOB_SERVICE


def mark_job_span(span: SpanRecord, service: Optional[str] = None) -> None:
    """Export ``span`` under the job's service name (``export.otlp.SERVICE_KEY``); journaled as a row,
    not as its lines (the lines do not carry the mark). Rare: once per job and per span a job adds."""
    span.attributes[SERVICE_KEY] = service or job_service_name()
    span.lines = None


class ReadingHalf:
    """Reading, assembling, batching and checkpointing (mixed into daemon.Sidecar)."""

    spool: Spool
    counters: Counters
    assembler: Assembler
    reader: Optional[EventLogReader]
    channels: Optional[JobChannels]
    failures: FailureNotes
    next_seq: int
    outbox_cap: int
    _ready: List[SpanRecord]
    _ready_since: float
    _committed_seq: int
    _committed_offset: int
    _committed_at: float
    _cache: Dict[int, List[SpanRecord]]
    _sizes: Dict[int, Tuple[int, int]]
    _exporting: Optional[int]
    _cap_warned: bool
    _lock: threading.Condition
    policy: Policy
    _dropped: DroppedSpans

    def _passes(self, event: Event, verdict: Optional[Verdict] = None) -> bool:
        """Does the enforced decision (enforce.py) let this event through? A ``B`` is judged (the
        glidein's rule, or a job's ``verdict``); the later events of a dropped span follow it."""
        key = (event.trace_id, event.span_id)
        if event.kind != "B":
            return key not in self._dropped
        if verdict is None:
            ok = self.policy.glidein_allows(event)
        else:
            ok = allowed(verdict, span_kind(event))
        if not ok:
            self._dropped.add(key)
            self.counters.add("spans_dropped_control")
        return ok

    def step(self, force_flush: bool = False) -> int:
        """Read what is new in the log; return the number of lines handled,
        at least 1 when the offset moved (a step that only skipped part of an
        oversized line made progress too: the drain loops go on)."""
        assert self.reader is not None
        if self.policy.waiting() and not force_flush:
            return 0                               # the glidein's decision first (at most enforce.HANDOVER_S)
        before = (self.reader.offset, self.reader.resets)
        lines, oversized = self.reader.read_lines(STEP_BYTES)
        moved = (self.reader.offset, self.reader.resets) != before
        ready = self._ready
        was_empty = not ready
        failures = self.failures
        if lines:
            failures.seen_events()
        sampled = bool(lines) and failures.watching or failures.idle_due
        if sampled:
            self.failures.sample()                 # where registered stderr files end now (failure.py)
        feed = self.assembler.feed
        malformed = finished = 0
        check = self.policy.active
        for raw in lines:
            try:
                # The reader already dropped lines over MAX_LINE_BYTES (parse_line's check).
                event = parse_text(raw.decode("utf-8", "replace"))
                if check and not self._passes(event):
                    continue
                span = feed(event, raw)
            except Exception:  # noqa: BLE001 - ProtocolError or worse: input must never kill the sidecar
                malformed += 1
                continue
            if span is not None:
                if span.attributes.get("gwtrace.kind") == "job":     # the job wrapper's user_job span
                    mark_job_span(span)
                if span.status == "error" or REGISTERED in span.attributes:
                    self.failures.on_finished(span, self.assembler.open)
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
        jobs = self._step_jobs(sampled)
        self._flush(force=force_flush)
        return len(lines) + oversized + jobs or int(moved)

    def _step_jobs(self, sampled: bool = False) -> int:
        """Read the user jobs' logs: only what each job may write (channels.py). SAMPLED: the
        registered stderr files' sizes were noted in this step already."""
        channels = self.channels
        if channels is None:
            return 0
        channels.discover()
        service = job_service_name()
        handled = received = malformed = rejected = finished = 0
        ready = self._ready
        was_empty = not ready
        policy = self.policy
        for channel in channels:
            verdict = policy.job(channel.name) if policy.active else None
            before = (channel.reader.offset, channel.reader.resets)
            lines, oversized = channel.reader.read_lines(STEP_BYTES)
            handled += len(lines) + oversized + int((channel.reader.offset, channel.reader.resets) != before)
            malformed += oversized
            if lines and not sampled:
                self.failures.seen_events()
                if self.failures.watching:
                    sampled = True
                    self.failures.sample()
            for raw in lines:
                try:
                    event = parse_text(raw.decode("utf-8", "replace"))
                except Exception:  # noqa: BLE001 - a job's input never kills the sidecar
                    malformed += 1
                    continue
                if not channel.allows(event):
                    rejected += 1
                    continue
                if verdict is not None and not self._passes(event, verdict):
                    continue
                received += 1
                try:
                    span = self.assembler.feed(event, raw)
                except Exception:  # noqa: BLE001
                    malformed += 1
                    continue
                if span is not None:
                    mark_job_span(span, service)
                    if span.status == "error" or REGISTERED in span.attributes:
                        self.failures.on_finished(span, self.assembler.open)
                    ready.append(span)
                    finished += 1
        counters = self.counters
        if received:
            counters.add("events_received", received)
        if malformed:
            counters.add("events_malformed", malformed)
        if rejected:
            counters.add("events_rejected_job", rejected)
        if finished:
            counters.add("spans_finished", finished)
            if was_empty:
                self._ready_since = time.monotonic()
        return handled

    def _flush(self, force: bool = False) -> None:
        """Move ready spans into outbox batches and checkpoint the offset."""
        if not self._ready:
            # Only events of spans still open: checkpoint the offset now and then.
            if self.reader is not None and self._committed_offset != self._position() and \
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

    def _position(self) -> int:
        """Where reading stands: the log's offset and the job logs' (a change is worth a checkpoint)."""
        assert self.reader is not None
        jobs = sum(ch.reader.offset for ch in self.channels) if self.channels is not None else 0
        return self.reader.offset + jobs

    def _commit(self) -> None:
        assert self.reader is not None
        with self._lock:
            counters = dict(self.counters)
        self.spool.save_checkpoint(Checkpoint(
            offset=self.reader.offset, inode=self.reader.inode, next_seq=self.next_seq,
            open_spans=self.assembler.snapshot(), counters=counters,
            channels=self.channels.state() if self.channels is not None else {}))
        self._committed_offset = self._position()
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
