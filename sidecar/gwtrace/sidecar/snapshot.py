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
there, straight into protobuf messages (no SDK spans); the request is sent
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
import urllib.parse
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from gwtrace import __version__
from gwtrace.sidecar.assembler import SpanRecord

log = logging.getLogger("gwtrace.sidecar.snapshot")

SCOPE_NAME = "gwtrace.snapshot"
SNAPSHOT_PATH = "/v1/gwtrace/snapshot"
DEFAULT_INTERVAL_S = 60.0
#: The first snapshot comes this soon after start (or the interval, if shorter):
#: a glidein's validation takes minutes, and should show while it runs.
FIRST_AFTER_S = 5.0
MAX_SEND_TIMEOUT_S = 5.0
#: Scope attributes of a snapshot request (the span attribute is MARK).
MARK = "gwtrace.snapshot"
KEY, SEQ, TAKEN, INTERVAL, UNCHANGED = ("gwtrace.snapshot.key", "gwtrace.snapshot.seq",
                                        "gwtrace.snapshot.taken_unix_nano", "gwtrace.snapshot.interval_s",
                                        "gwtrace.snapshot.unchanged")
#: What a store answers to a heartbeat for a glidein it has no snapshot of.
UNKNOWN_GLIDEIN = 409


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


def derive_endpoint(traces_endpoint: str, base_endpoint: str) -> str:
    """The snapshot URL of the gwtrace serve the OTLP endpoint names."""
    if traces_endpoint:
        url = traces_endpoint.rstrip("/")
        return (url[: -len("/v1/traces")] if url.endswith("/v1/traces") else url) + SNAPSHOT_PATH
    return base_endpoint.rstrip("/") + SNAPSHOT_PATH


def snapshot_target(env: Optional[Mapping[str, str]] = None) -> Tuple[str, str]:
    """("url", URL), ("store", "") or ("off", why), from the environment (module docstring)."""
    env = os.environ if env is None else env
    if snapshot_interval(env) <= 0:
        return "off", "GWTRACE_SNAPSHOT_INTERVAL=0"
    if (env.get("GWTRACE_EXPORT") or "").strip().lower() == "ship-home":
        return "off", "ship-home: nothing leaves the node"
    explicit = (env.get("GWTRACE_SNAPSHOT_ENDPOINT") or "").strip()
    traces = (env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or "").strip()
    base = (env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "").strip()
    if explicit.lower() == "gwtrace":
        if not (traces or base):
            return "store", ""
        return "url", derive_endpoint(traces, base)
    if explicit.lower() in ("off", "none", "0"):
        return "off", f"GWTRACE_SNAPSHOT_ENDPOINT={explicit}"
    if explicit:
        return "url", explicit
    if traces or base:
        return "off", "the OTLP endpoint is not known to be gwtrace (set GWTRACE_SNAPSHOT_ENDPOINT)"
    return "store", ""


def otlp_headers(env: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """OTEL_EXPORTER_OTLP_[TRACES_]HEADERS (``k=v,k2=v2``, URL-encoded): the bearer token of /v1/traces."""
    env = os.environ if env is None else env
    raw = env.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or env.get("OTEL_EXPORTER_OTLP_HEADERS") or ""
    headers = {}
    for item in raw.split(","):
        if "=" in item:
            key, value = item.split("=", 1)
            headers[urllib.parse.unquote(key).strip()] = urllib.parse.unquote(value).strip()
    return headers


def snapshot_key(resource: Mapping[str, Any], directory: str) -> str:
    """Which glidein a snapshot is of: its uuid, else one sidecar (host and state directory)."""
    for name in ("glidein.uuid", "service.instance.id"):
        value = resource.get(name)
        if value:
            return str(value)
    seed = f"{resource.get('host.name', '')}:{os.path.realpath(directory)}"
    return "sidecar-" + hashlib.sha256(seed.encode()).hexdigest()[:16]


# -- encoding -------------------------------------------------------------------------


def _any(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, (list, tuple)):
        out = AnyValue()
        out.array_value.values.extend(_any(v) for v in value)
        return out
    return AnyValue(string_value=str(value))


def key_values(attrs: Iterable[Tuple[str, Any]]) -> List[KeyValue]:
    return [KeyValue(key=k, value=_any(v)) for k, v in attrs]


def encode_snapshot(spans: Iterable[SpanRecord], resource: Mapping[str, Any], meta: Mapping[str, Any],
                    unchanged: bool = False) -> bytes:
    """One ExportTraceServiceRequest: the open spans (none for a heartbeat), marked as a snapshot.

    Reads the records and never changes them: the same objects are later
    ended and exported as the real spans.
    """
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.extend(key_values(resource.items()))
    ss = rs.scope_spans.add()
    ss.scope.name = SCOPE_NAME
    ss.scope.version = __version__
    ss.scope.attributes.extend(key_values(list(meta.items()) + [(UNCHANGED, unchanged)]))
    if unchanged:
        return req.SerializeToString()
    add = ss.spans.add
    mark = KeyValue(key=MARK, value=AnyValue(bool_value=True))
    for r in spans:
        span = add(trace_id=bytes.fromhex(r.trace_id), span_id=bytes.fromhex(r.span_id), name=r.name,
                   start_time_unix_nano=r.start_us * 1000, kind=1, trace_state=r.tracestate)
        if r.parent_id:
            span.parent_span_id = bytes.fromhex(r.parent_id)
        span.attributes.extend(key_values(r.attributes.items()))
        span.attributes.append(KeyValue(key="process.pid", value=AnyValue(int_value=r.pid)))
        span.attributes.append(mark)
    return req.SerializeToString()


# -- sending ----------------------------------------------------------------------------


class SendError(Exception):
    """A snapshot that did not arrive; ``unknown`` when the store lacks the glidein (409)."""

    def __init__(self, message: str, unknown: bool = False) -> None:
        super().__init__(message)
        self.unknown = unknown


class HttpSender:
    """POSTs snapshots to a gwtrace serve, with /v1/traces' headers (bearer token), TLS and gzip settings."""

    def __init__(self, url: str, env: Optional[Mapping[str, str]] = None) -> None:
        import requests

        env = os.environ if env is None else env
        self.url = url
        self.session = requests.Session()
        self.session.headers.update(otlp_headers(env))
        self.session.headers["Content-Type"] = "application/x-protobuf"
        cert = env.get("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE") or env.get("OTEL_EXPORTER_OTLP_CERTIFICATE")
        self.verify: Any = cert or True
        compression = env.get("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION") or env.get("OTEL_EXPORTER_OTLP_COMPRESSION")
        self.gzip = (compression or "").strip().lower() == "gzip"
        from gwtrace.export.otlp import otlp_timeout_seconds

        self.timeout = min(otlp_timeout_seconds(env), MAX_SEND_TIMEOUT_S)
        self.destination = url

    def send(self, body: bytes) -> None:
        import requests

        headers = {}
        if self.gzip:
            import gzip

            body = gzip.compress(body, 6)
            headers["Content-Encoding"] = "gzip"
        try:
            resp = self.session.post(self.url, data=body, headers=headers, timeout=self.timeout, verify=self.verify)
        except requests.RequestException as exc:
            raise SendError(f"{type(exc).__name__}: {exc}") from None
        if resp.status_code == UNKNOWN_GLIDEIN:
            raise SendError("the store has no snapshot of this glidein", unknown=True)
        if resp.status_code != 200:
            raise SendError(f"HTTP {resp.status_code}")

    def close(self) -> None:
        self.session.close()


class StoreSender:
    """Writes snapshots into the embedded store (the file the spans go to)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.destination = f"embedded store {store.path}"

    def send(self, body: bytes) -> None:
        req = ExportTraceServiceRequest()
        req.ParseFromString(body)
        if not self.store.put_live_snapshot(req):
            raise SendError("the store has no snapshot of this glidein", unknown=True)

    def close(self) -> None:
        pass


class Snapshotter:
    """Decides when to snapshot (in the reader thread) and sends (in its own thread).

    ``due(offset)`` is called from the sidecar's loop with the event log's
    offset: it says whether a snapshot is due and whether the table may have
    changed since the last full one (anything read from the log may have).
    """

    def __init__(self, sender: Any, interval: float, resource: Mapping[str, Any], key: str,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.sender = sender
        self.interval = interval
        self.resource = dict(resource)
        self.key = key
        self.clock = clock
        self.seq = 0
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
        body = encode_snapshot(table, self.resource, meta, unchanged)
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
        self._thread.join(timeout=MAX_SEND_TIMEOUT_S + 1)
        self.sender.close()


def make_snapshotter(delivery: Any, resource: Mapping[str, Any], directory: str,
                     env: Optional[Mapping[str, str]] = None) -> Tuple[Optional[Snapshotter], str]:
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
    return snap, f"live snapshots every {interval:g}s to {sender.destination}"
