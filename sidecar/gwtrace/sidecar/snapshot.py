"""Live snapshots: the sidecar's open spans, sent now and then, so a glidein shows while it runs.

OTLP carries only ended spans, and a glidein's root span ends after hours.
So every ``GWTRACE_SNAPSHOT_INTERVAL`` seconds (default 60, 0 = off) the
sidecar copies its open-span table into one OTLP ``ExportTraceServiceRequest``
whose scope is ``gwtrace.snapshot`` and whose every span carries
``gwtrace.snapshot=true``, and sends it *only* to a gwtrace store: the
``POST /v1/gwtrace/snapshot`` endpoint of ``gwtrace serve`` (never
``/v1/traces``) or, with the embedded store, its ``live_snapshots`` table.
A plain OTLP collector (Jaeger, Tempo) never gets one, and nothing of a
snapshot enters the outbox, the checkpoint or the spans finally exported:
the snapshot reads the table and builds its own messages.

Where snapshots go (``snapshot_target``):

* ``GWTRACE_SNAPSHOT_ENDPOINT=URL``: that URL (a gwtrace serve);
* ``GWTRACE_SNAPSHOT_ENDPOINT=gwtrace``: derived from the OTLP traces
  endpoint (``.../v1/traces`` -> ``.../v1/gwtrace/snapshot``), for when you
  know that endpoint is a gwtrace serve;
* unset, with no OTLP endpoint: the embedded store the spans go to;
* unset with an OTLP endpoint, or ship-home: no snapshots (gwtrace cannot
  know that the collector is gwtrace, and must not send it anything else).

Cost: the table is read in the reader thread (which owns it) and encoded
there, into protobuf bytes by ``snapshot_wire`` (no SDK spans, cached from one
snapshot to the next); the request is sent by ``snapshot_send``
from a thread of its own, at most one in flight, so a slow server never
stalls reading. When nothing was read from the event log since the last
full snapshot, a *heartbeat* is sent instead: the same request with no spans
and ``gwtrace.snapshot.unchanged=true``, which only says "still alive". With
no span open, one empty snapshot tells the store (which then forgets the
glidein) and nothing more is sent until a span opens. A
store that does not know the glidein (restarted, other file) answers 409 and
the next snapshot is a full one. Failures are counted
(``snapshot_failures``, ``last_snapshot_error`` in ``sidecar status``), never
fatal. Python 3.9-compatible: this runs on worker nodes.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Tuple

from gwtrace.export.otlpenv import OtlpEnv, otlp_env
from gwtrace.wire.span import SpanRecord
from gwtrace.sidecar.snapshot_send import HttpSender, StoreSender
from gwtrace.sidecar.snapshot_wire import Encoder
from gwtrace.wire.redact import strip_userinfo

log = logging.getLogger("gwtrace.sidecar.snapshot")

SNAPSHOT_PATH = "/v1/gwtrace/snapshot"
DEFAULT_INTERVAL_S = 60.0
#: The first snapshot comes this soon after start (or the interval, if shorter):
#: a glidein's validation takes minutes, and should show while it runs.
FIRST_AFTER_S = 5.0
#: Scope attributes of a snapshot request (the span attribute is snapshot_wire.MARK).
KEY, SEQ, TAKEN, INTERVAL = ("gwtrace.snapshot.key", "gwtrace.snapshot.seq", "gwtrace.snapshot.taken_unix_nano",
                             "gwtrace.snapshot.interval_s")


def snapshot_interval(env: Optional[Mapping[str, str]] = None) -> float:
    """GWTRACE_SNAPSHOT_INTERVAL in seconds (default 60; 0 or less: off)."""
    env = os.environ if env is None else env
    raw = (env.get("GWTRACE_SNAPSHOT_INTERVAL") or "").strip()
    if not raw:
        return DEFAULT_INTERVAL_S
    try:
        value = float(raw)
    except ValueError:
        log.warning("ignoring GWTRACE_SNAPSHOT_INTERVAL=%r: not a number of seconds", raw)
        return DEFAULT_INTERVAL_S
    return value if value > 0 else 0.0


def derive_endpoint(otlp: OtlpEnv) -> str:
    """The snapshot URL of the gwtrace serve the OTLP endpoint names (``.../v1/traces`` -> ``...`` + SNAPSHOT_PATH)."""
    return otlp.base_url + SNAPSHOT_PATH


def snapshot_target(env: Optional[Mapping[str, str]] = None) -> Tuple[str, str]:
    """("url", URL), ("store", "") or ("off", why), from the environment (module docstring)."""
    env = os.environ if env is None else env
    if snapshot_interval(env) <= 0:
        return "off", "GWTRACE_SNAPSHOT_INTERVAL=0"
    if (env.get("GWTRACE_EXPORT") or "").strip().lower() == "ship-home":
        return "off", "ship-home: nothing leaves the node"
    explicit = (env.get("GWTRACE_SNAPSHOT_ENDPOINT") or "").strip()
    otlp = otlp_env(env)
    if explicit.lower() == "gwtrace":
        if not otlp.configured:
            return "store", ""
        return "url", derive_endpoint(otlp)
    if explicit.lower() in ("off", "none", "0"):
        return "off", f"GWTRACE_SNAPSHOT_ENDPOINT={strip_userinfo(explicit)}"
    if explicit:
        return "url", explicit
    if otlp.configured:
        return "off", "the OTLP endpoint is not known to be gwtrace (set GWTRACE_SNAPSHOT_ENDPOINT)"
    return "store", ""


def snapshot_key(resource: Mapping[str, Any], directory: str) -> str:
    """Which glidein a snapshot is of: its uuid, else one sidecar (host and state directory).

    Not ``service.instance.id``: some SDK versions make a random one per
    process, and a sidecar taking the directory over must replace the same row.
    """
    value = resource.get("glidein.uuid")
    if value:
        return str(value)
    seed = f"{resource.get('host.name', '')}:{os.path.realpath(directory)}"
    return "sidecar-" + hashlib.sha256(seed.encode()).hexdigest()[:16]


class Snapshotter:
    """Decides when to snapshot (in the reader thread) and sends (in its own thread).

    ``maybe(spans, offset)`` is called from the sidecar's loop with the
    event log's offset: a snapshot is taken when one is due, a full one if
    the table may have changed since the last full one delivered (anything
    read from the log may have changed it), else a heartbeat.
    """

    def __init__(self, sender: Any, interval: float, resource: Mapping[str, Any], key: str,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.sender = sender
        self.interval = interval
        self.resource = dict(resource)
        self.key = key
        self.clock = clock
        self.seq = 0
        self.encoder = Encoder()
        self._next_at = clock() + min(interval, FIRST_AFTER_S)
        self._full_offset: Optional[int] = None     # log offset of the last full snapshot delivered
        self._empty_sent = False                     # the last one delivered had no open span
        self._lock = threading.Condition()
        self._pending: Optional[Tuple[bytes, Optional[int], bool]] = None   # body, log offset, empty
        self._stopping = False
        self.counters: Dict[str, int] = {"snapshots_sent": 0, "snapshots_unchanged": 0, "snapshot_failures": 0,
                                         "snapshots_superseded": 0}
        self.last_error = ""
        self.cpu_s = 0.0                             # CPU time spent building snapshots (bench/snapshot)
        #: Called with each answer's Gwtrace-Commands header (commands.py), in this sender thread.
        self.on_commands: Optional[Callable[[Optional[str]], Any]] = None
        self._thread = threading.Thread(target=self._loop, name="gwtrace-snapshot", daemon=True)
        self._thread.start()

    def maybe(self, spans: Callable[[], Iterable[SpanRecord]], offset: int) -> bool:
        """Build and queue a snapshot if one is due; return whether one was queued."""
        if self.clock() < self._next_at:
            return False
        self._next_at = self.clock() + self.interval
        table = list(spans())
        if not table and self._empty_sent:
            return False        # nothing open, and the store was told: nothing to say (no heartbeats)
        self.take(table, offset)
        return True

    def take(self, spans: Iterable[SpanRecord], offset: Optional[int]) -> bytes:
        """Encode the table now (full, or a heartbeat if nothing was read since the last full one)."""
        cpu = time.thread_time()
        self.seq += 1
        unchanged = offset is not None and offset == self._full_offset
        table = [] if unchanged else list(spans)
        meta = {KEY: self.key, SEQ: self.seq, TAKEN: time.time_ns(), INTERVAL: self.interval}
        body = self.encoder.snapshot(table, self.resource, meta, unchanged)
        with self._lock:
            if self._pending is not None:
                self.counters["snapshots_superseded"] += 1
            self._pending = (body, None if unchanged else offset, not unchanged and not table)
            self._lock.notify_all()
        self.cpu_s += time.thread_time() - cpu
        return body

    def _loop(self) -> None:
        while True:
            with self._lock:
                while self._pending is None and not self._stopping:
                    self._lock.wait()
                if self._stopping:
                    return
                assert self._pending is not None
                body, offset, empty = self._pending
                self._pending = None
            self._send(body, offset, empty)

    def _send(self, body: bytes, offset: Optional[int], empty: bool = False) -> None:
        try:
            self.sender.send(body)
        except Exception as exc:  # noqa: BLE001 - a snapshot must never hurt the sidecar
            with self._lock:
                self.counters["snapshot_failures"] += 1
                if getattr(exc, "unknown", False):
                    self._full_offset = None        # the next one is a full snapshot
                if str(exc) != self.last_error:
                    log.warning("snapshot not delivered to %s: %s", self.sender.destination, exc)
                self.last_error = str(exc)
            return
        with self._lock:
            if offset is None:
                self.counters["snapshots_unchanged"] += 1
            else:
                self.counters["snapshots_sent"] += 1
                self._full_offset = offset
                self._empty_sent = empty
            self.last_error = ""
        commands = getattr(self.sender, "commands", None)
        if commands and self.on_commands is not None:
            try:
                self.on_commands(commands)
            except Exception as exc:  # noqa: BLE001 - a command must never hurt the sidecar
                log.warning("back-channel commands failed: %s: %s", type(exc).__name__, exc)

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """Until the queued snapshot was sent (tests, the bench)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if self._pending is None and not self._busy():
                    return True
            time.sleep(0.005)
        return False

    def _busy(self) -> bool:
        return sum(self.counters[k] for k in ("snapshots_sent", "snapshots_unchanged", "snapshot_failures",
                                              "snapshots_superseded")) < self.seq

    def close(self) -> None:
        with self._lock:
            self._stopping = True
            self._lock.notify_all()
        # A send under way is not waited for (at most MAX_SEND_TIMEOUT_S): the stop has spans to deliver.
        self._thread.join(timeout=0.5)
        if not self._thread.is_alive():
            self.sender.close()


def make_snapshotter(delivery: Any, resource: Mapping[str, Any], directory: str,
                     env: Optional[Mapping[str, str]] = None,
                     policy: Any = None) -> Tuple[Optional[Snapshotter], str]:
    """The configured Snapshotter (None when off) and a line for the log saying where snapshots go."""
    kind, value = snapshot_target(env)
    if kind == "off":
        return None, f"live snapshots off: {value}"
    if kind == "store":
        store = getattr(delivery.exporter, "store", None)
        if store is None:
            return None, "live snapshots off: no store to write them to"
        sender: Any = StoreSender(store)
    else:
        sender = HttpSender(value, env)
    interval = snapshot_interval(env)
    snap = Snapshotter(sender, interval, resource, snapshot_key(resource, directory))
    if kind == "url":
        from gwtrace.sidecar.commands import CommandRunner, results_url

        runner = CommandRunner(directory, results_url(value), snap.key, env, policy=policy)
        snap.counters.update(runner.counters)
        runner.counters = snap.counters          # `gwtrace sidecar status` shows them with the snapshots'
        snap.on_commands = runner.handle
    return snap, f"live snapshots every {interval:g}s to {sender.destination}"
