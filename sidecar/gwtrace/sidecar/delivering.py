"""The sidecar's export thread: committed outbox batches -> the collector, with backoff.

A batch the collector could not take now (connection refused, time-out,
429/502/503/504) stays and is retried with exponential backoff or after its
Retry-After; a batch the collector refuses for good (other 4xx/5xx) is set
aside and counted. A batch is deleted only once delivered.
"""

from __future__ import annotations

import logging
import threading
from typing import Dict, List, Optional, Set, Tuple

from gwtrace.export.otlp import Delivery, Outcome, to_readable_spans
from gwtrace.sidecar.assembler import Counters
from gwtrace.wire.span import SpanRecord
from gwtrace.sidecar.statedir import Spool

log = logging.getLogger("gwtrace.sidecar.daemon")

RETRY_MIN_S = 1.0
RETRY_MAX_S = 30.0


class DeliveryHalf:
    """The export thread's work (mixed into daemon.Sidecar; shares its lock and counters)."""

    spool: Spool
    delivery: Delivery
    resource: object
    destination: str
    counters: Counters
    last_error: str
    _committed_seq: int
    _cache: Dict[int, List[SpanRecord]]
    _sizes: Dict[int, Tuple[int, int]]
    _exporting: Optional[int]
    _inflight_at_start: Set[int]
    _failing: str
    _lock: threading.Condition
    _stopping: threading.Event
    _export_done: threading.Event
    _retry_now: threading.Event
    _unreachable_at_stop: threading.Event

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
