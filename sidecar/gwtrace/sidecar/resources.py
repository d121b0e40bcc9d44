"""What the glidein and each job use, sampled by the sidecar (docs/resources.md).

A thread of the sidecar's own (never the traced shell) samples, every
``GWTRACE_RESOURCE_INTERVAL`` seconds (default 30, ``0`` = off):

* the glidein: the process tree under the glidein's top process
  (``GWTRACE_GLIDEIN_PID``, else ``GLIDEIN_STARTUP_PID`` from ``glidein_config``;
  none named: no glidein subject), and the node's load average;
* each running job: the job wrapper registers it in ``resources/<trace>-<span>``
  in the state directory (its pid, the job's id, owner, requests, and an interval
  of its own, ``GWTRACE_JOB_RESOURCE_INTERVAL``); the tree under that pid, and the
  job's cgroup when HTCondor gave it one of its own (v2 or v1), read from
  ``/proc/<pid>/cgroup``.

Samples (``export.metrics.ResourceSample``) wait in a bounded buffer
(``GWTRACE_RESOURCE_MAX_POINTS`` data points, oldest dropped and counted) and go,
after each round, to the OTLP endpoint's ``/v1/metrics``, or into the embedded
store (``TraceStore.put_metrics``, where the store has it), or wait for the stop,
which ships them home as ``kind=metrics`` blocks (``sidecar/ship.py``).

Pids are reused: a subject is its pid *and* its start tick (``/proc/PID/stat``);
a registration whose process started after the file was written names another
process and is dropped.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from typing import Any, Callable, Deque, Dict, List, Mapping, Optional, TextIO, Tuple

from gwtrace.export.metrics import ResourceSample, to_metrics_data, to_request
from gwtrace.sidecar.channels import make_resources_dir
from gwtrace.sidecar.subjects import MAX_INTERVAL_S, MIN_INTERVAL_S, Sampler, glidein_pid

log = logging.getLogger("gwtrace.sidecar.resources")

DEFAULT_INTERVAL_S = 30.0
DEFAULT_MAX_POINTS = 50_000
#: Data points in one request (a collector's default limit is a few MB: ~100 bytes a point).
POINTS_PER_REQUEST = 5_000
#: New job registrations are looked for at least this often.
DISCOVER_S = 5.0
MAX_BACKOFF_S = 300.0

#: Counters this module adds to ``gwtrace sidecar status``.
RESOURCE_COUNTERS = ("resource_samples", "resource_points_exported", "resource_points_dropped",
                     "resource_points_shipped", "resource_export_failures")


def interval_from_env(name: str = "GWTRACE_RESOURCE_INTERVAL", default: float = DEFAULT_INTERVAL_S) -> float:
    """Seconds between samples: 0 is off; a bad value is warned about and the default kept."""
    raw = (os.environ.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        log.warning("ignoring %s=%r: not a number of seconds", name, raw)
        return default
    if value <= 0:
        return 0.0
    return min(max(value, MIN_INTERVAL_S), MAX_INTERVAL_S)


def max_points_from_env() -> int:
    raw = (os.environ.get("GWTRACE_RESOURCE_MAX_POINTS") or "").strip()
    try:
        return max(100, int(raw)) if raw else DEFAULT_MAX_POINTS
    except ValueError:
        log.warning("ignoring GWTRACE_RESOURCE_MAX_POINTS=%r: not a whole number", raw)
        return DEFAULT_MAX_POINTS


class Buffer:
    """Samples waiting to be delivered, at most ``max_points`` data points: the oldest go first."""

    def __init__(self, max_points: int) -> None:
        self.max_points = max_points
        self.samples: Deque[ResourceSample] = deque()
        self.points = 0
        self.dropped = 0

    def add(self, samples: List[ResourceSample]) -> None:
        for s in samples:
            self.samples.append(s)
            self.points += s.points
        while self.points > self.max_points and self.samples:
            old = self.samples.popleft()
            self.points -= old.points
            self.dropped += old.points

    def take(self, max_points: int) -> List[ResourceSample]:
        """The oldest samples, up to ``max_points`` points (at least one sample); left in the buffer."""
        out, n = [], 0
        for s in self.samples:
            if out and n + s.points > max_points:
                break
            out.append(s)
            n += s.points
        return out

    def remove(self, count: int) -> None:
        for _ in range(count):
            self.points -= self.samples.popleft().points


class ResourceMonitor:
    """The sampling thread: rounds on schedule, delivery after each round, the leftovers at stop.

    ``send(request_or_data)`` is the destination: it gets ``MetricsData`` and says whether it was
    delivered (``export.metrics.MetricsOutcome``); None means hold everything for the stop (ship-home).
    """

    def __init__(self, sampler: Sampler, buffer: Buffer, base: Callable[[], Mapping[str, Any]],
                 send: Optional[Callable[[Any], Any]] = None, destination: str = "held for ship-home",
                 resolve: Optional[Callable[[], Tuple[Optional[Callable[[Any], Any]], str]]] = None) -> None:
        self._resolve = resolve     # (send, destination) worked out in the thread: the exporter loads there
        self.sampler = sampler
        self.buffer = buffer
        self.base = base
        self.send = send
        self.destination = destination
        self.counters: Dict[str, int] = dict.fromkeys(RESOURCE_COUNTERS, 0)
        self.last_error = ""
        self.refused = ""            # why the endpoint refused metrics for good ("" while it has not)
        self._failing = False
        self._retry_at = 0.0
        self._backoff = 1.0
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._discovered = 0.0

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="gwtrace-resources", daemon=True)
        self._thread.start()

    def round(self, now: Optional[float] = None, force: bool = False) -> int:
        """Discover jobs (at most every DISCOVER_S), sample what is due, deliver; the samples taken."""
        now = time.monotonic() if now is None else now
        if self.refused:
            return 0
        if force or now - self._discovered >= min(DISCOVER_S, self.sampler.interval):
            self._discovered = now
            self.sampler.discover()
        samples = self.sampler.sample(now, force)
        if samples:
            self.counters["resource_samples"] += len(samples)
            self.buffer.add(samples)
            self.counters["resource_points_dropped"] = self.buffer.dropped
        if self.buffer.samples:
            self._resolve_destination()     # once, when there is something to send (the exporter loads then)
        if self.send is not None and self.buffer.samples and now >= self._retry_at:
            self.flush(now)
        return len(samples)

    def flush(self, now: Optional[float] = None, deadline: Optional[float] = None) -> None:
        """Deliver the buffer, a request at a time, until it is empty or one fails."""
        assert self.send is not None
        now = time.monotonic() if now is None else now
        while self.buffer.samples and (deadline is None or time.monotonic() < deadline):
            batch = self.buffer.take(POINTS_PER_REQUEST)
            data = to_metrics_data(batch, self.sampler.subjects_for_export(), self.base())
            try:
                outcome = self.send(data)
            except Exception as exc:  # noqa: BLE001 - never fatal
                outcome = None
                message = f"{type(exc).__name__}: {exc}"
            else:
                message = outcome.message
            points = sum(s.points for s in batch)
            if outcome is not None and outcome.delivered:
                self.buffer.remove(len(batch))
                self.counters["resource_points_exported"] += points
                if self._failing:
                    log.info("resource metrics delivered again to %s", self.destination)
                self._failing, self._backoff = False, 1.0
                continue
            self.counters["resource_export_failures"] += 1
            self.last_error = message
            if outcome is not None and not outcome.retryable:
                self._refuse(message)
                return
            if not self._failing:
                log.warning("resource metrics not delivered to %s: %s", self.destination, message)
            self._failing = True
            self._retry_at = now + self._backoff
            self._backoff = min(MAX_BACKOFF_S, self._backoff * 2)
            return

    def _refuse(self, message: str) -> None:
        """The endpoint refused metrics for good (a 4xx other than 429: a traces-only collector answers
        404): sampling stops, and what was buffered is dropped and counted, neither retried nor shipped."""
        self.refused = message
        self.buffer.dropped += self.buffer.points
        self.buffer.remove(len(self.buffer.samples))
        self.counters["resource_points_dropped"] = self.buffer.dropped
        log.warning("resource metrics refused by %s (%s): sampling stopped", self.destination, message)

    def _resolve_destination(self) -> None:
        resolve, self._resolve = self._resolve, None
        if resolve is not None:
            try:
                self.send, self.destination = resolve()
            except Exception as exc:  # noqa: BLE001 - held for ship-home, said once
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.warning("resource metrics held for ship-home: %s", self.last_error)
            log.info("resource metrics every %.0f s: %s", self.sampler.interval, self.destination)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.round()
                wait = min(self.sampler.next_due(), self._discovered + DISCOVER_S) - time.monotonic()
            except Exception as exc:  # noqa: BLE001 - the sampler must never take the sidecar down
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.warning("resource sampling failed: %s", self.last_error)
                wait = self.sampler.interval
            self._stop.wait(max(0.05, wait))

    def close(self, timeout: float) -> bool:
        """Stop the thread; one last round (every subject) and one last delivery within ``timeout``.
        False if the thread is still busy (a request that outlives the stop): the buffer is its."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout + 1)
            if self._thread.is_alive():
                log.warning("resource sampler still busy at stop: %d point(s) not shipped", self.buffer.points)
                return False
        deadline = time.monotonic() + max(0.0, timeout)
        try:
            self._resolve_destination()      # a sidecar stopped before its thread got to it
            if self.refused:
                return True
            self.sampler.discover()          # the glidein's trace, if published since the last look
            samples = self.sampler.sample(force=True)
            self.counters["resource_samples"] += len(samples)
            self.buffer.add(samples)
            self.counters["resource_points_dropped"] = self.buffer.dropped
            if self.send is not None and not self._failing:     # a failing endpoint: they ride home instead
                self._retry_at = 0.0
                self.flush(deadline=deadline)
        except Exception as exc:  # noqa: BLE001
            self.last_error = f"{type(exc).__name__}: {exc}"
        return True

    def finish(self, ship_to: Optional[TextIO], timeout: float) -> None:
        """At the sidecar's stop: the last round and delivery (``close``), then what is left as
        ``kind=metrics`` blocks into ``ship_to``, or counted as dropped without one."""
        from gwtrace.sidecar.ship import ship_metrics

        if not self.close(timeout):
            return
        leftovers = self.leftover_requests()
        points = sum(n for _, n in leftovers)
        if ship_to is not None and leftovers:
            try:
                self.counters["resource_points_shipped"] += ship_metrics(leftovers, ship_to)
                return
            except (OSError, ValueError) as exc:
                log.warning("resource metrics not shipped: %s", exc)
        self.counters["resource_points_dropped"] += points

    def leftover_requests(self) -> List[Tuple[Any, int]]:
        """What is still undelivered, as (ExportMetricsServiceRequest, points) of at most
        POINTS_PER_REQUEST points each; the buffer is emptied."""
        out = []
        subjects, base = self.sampler.subjects_for_export(), self.base()
        while self.buffer.samples:
            batch = self.buffer.take(POINTS_PER_REQUEST)
            out.append((to_request(to_metrics_data(batch, subjects, base)), sum(s.points for s in batch)))
            self.buffer.remove(len(batch))
        return out

    def status(self) -> Dict[str, int]:
        counters = dict(self.counters)
        counters["resource_points_pending"] = self.buffer.points
        # read from the main thread while this one samples: list() of a dict is one step under the GIL
        counters["resource_jobs_sampled"] = sum(1 for k in list(self.sampler.subjects) if k.startswith("job:"))
        return counters


def start_resource_monitor(directory: str, glidein_config: Optional[str], delivery: Any,
                           base: Callable[[], Mapping[str, Any]]) -> Optional[ResourceMonitor]:
    """The sidecar's sampler, started (None when off); trouble setting it up is logged, never fatal."""
    try:
        monitor = make_resource_monitor(directory, glidein_config, delivery, base)
    except Exception as exc:  # noqa: BLE001
        log.warning("resource sampling off: %s: %s", type(exc).__name__, exc)
        return None
    if monitor is not None:
        monitor.start()
    return monitor


def make_resource_monitor(directory: str, glidein_config: Optional[str], delivery: Any,
                          base: Callable[[], Mapping[str, Any]]) -> Optional[ResourceMonitor]:
    """The sidecar's sampler from the environment, or None when ``GWTRACE_RESOURCE_INTERVAL=0``."""
    from gwtrace.sidecar.destination import make_metrics_send

    interval = interval_from_env()
    make_resources_dir(directory)      # job wrappers register there even with sampling off: harmless
    if not interval:
        return None
    sampler = Sampler(directory, interval, glidein_pid(glidein_config), glidein_config=glidein_config)
    return ResourceMonitor(sampler, Buffer(max_points_from_env()), base,
                           resolve=lambda: make_metrics_send(delivery))
