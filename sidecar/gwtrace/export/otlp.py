"""From gwtrace span records to OTLP, through opentelemetry-sdk.

Spans arrive finished, with ids and timestamps chosen by bash, so they are
built as SDK ``ReadableSpan`` objects (no live Tracer: a live span would take
its ids and clock from Python) and handed to a standard ``SpanExporter``:

* ``OTLPSpanExporter`` (opentelemetry-exporter-otlp-proto-http) when an
  endpoint is configured through the usual OTEL_EXPORTER_OTLP_* variables;
* ``gwtrace.store.exporter.StoreSpanExporter`` otherwise: the same OTLP
  encoding, written into the embedded SQLite store that ``gwtrace show`` and
  ``gwtrace serve`` read (the sidecar chooses: ``gwtrace.sidecar.destination``).
"""

from __future__ import annotations

import email.utils
import inspect
import logging
import time
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event as SdkEvent
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState

from gwtrace import __version__
from gwtrace.wire import traceparent
from gwtrace.wire.span import SpanRecord
from gwtrace.export.otlpenv import otlp_env
from gwtrace.export.reachability import EndpointUnreachable, RecordingSession

log = logging.getLogger("gwtrace.export.otlp")

SCOPE = InstrumentationScope("gwtrace.bash", __version__)


#: Immutable SDK values (Status, TraceFlags, SpanKind are value objects)
#: shared by every span instead of rebuilt per span: with the per-batch
#: caches in to_readable_spans, a third of its cost.
_STATUS_OK = Status(StatusCode.OK)
_STATUS_UNSET = Status(StatusCode.UNSET)
_STATUS_ERROR = Status(StatusCode.ERROR)
_FLAGS = (TraceFlags(TraceFlags.DEFAULT), TraceFlags(TraceFlags.SAMPLED))
_INTERNAL = SpanKind.INTERNAL


class HashedResource(Resource):
    """A Resource whose hash is computed once.

    The OTLP encoder groups a batch's spans by resource in a dict, and
    ``Resource.__hash__`` JSON-encodes every attribute on each call: once per
    span, a sixth of encoding a gwtrace span. Resource attributes are immutable,
    so the hash cannot change. Equal to the Resource it copies.
    """

    def __init__(self, resource: Resource) -> None:
        super().__init__(resource.attributes, resource.schema_url)
        self._hash = super().__hash__()

    def __hash__(self) -> int:
        return self._hash


def hashed_resource(resource: Resource) -> Resource:
    """``resource`` as a HashedResource (itself if it already is one)."""
    return resource if isinstance(resource, HashedResource) else HashedResource(resource)


_TRACE_ID_MAX = 2**128 - 1
_SPAN_ID_MAX = 2**64 - 1


def _span_context_constructor() -> Callable[[int, int, bool, TraceFlags, TraceState], SpanContext]:
    """SpanContext(trace_id, span_id, is_remote, flags, state), half price.

    A SpanContext is a tuple (trace_id, span_id, is_remote, flags, state,
    is_valid); its Python ``__new__`` only works out is_valid. Building the
    tuple directly, with the same is_valid test, halves the cost of the two
    contexts per span. Used only if it gives what the constructor gives on
    this SDK version; otherwise the constructor.
    """
    new = tuple.__new__

    def fast(trace_id: int, span_id: int, is_remote: bool, flags: TraceFlags, state: TraceState) -> SpanContext:
        return new(SpanContext, (trace_id, span_id, is_remote, flags, state,
                                 0 < trace_id <= _TRACE_ID_MAX and 0 < span_id <= _SPAN_ID_MAX))

    probes = [(0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7, True, TraceFlags(1), TraceState()),
              (0, 7, False, TraceFlags(0), TraceState([("k", "v")])), (5, 0, False, TraceFlags(1), TraceState())]
    try:
        for args in probes:
            a, b = SpanContext(*args), fast(*args)
            if a != b or type(a) is not type(b) or (a.trace_id, a.span_id, a.is_remote, a.trace_flags,
                                                     a.trace_state, a.is_valid) != \
                    (b.trace_id, b.span_id, b.is_remote, b.trace_flags, b.trace_state, b.is_valid):
                return SpanContext
    except Exception:  # noqa: BLE001 - any surprise: the constructor
        return SpanContext
    return fast


_span_context = _span_context_constructor()

#: ReadableSpan's parameters, in the order to_readable_spans passes them
#: positionally (keywords cost as much as the rest of the call); checked
#: against this SDK's signature, else keywords are used.
_READABLE_SPAN_ORDER = ("name", "context", "parent", "resource", "attributes", "events", "links", "kind",
                        "instrumentation_info", "status", "start_time", "end_time", "instrumentation_scope")
try:
    _READABLE_SPAN_POSITIONAL = tuple(inspect.signature(ReadableSpan.__init__).parameters)[1:14] == \
        _READABLE_SPAN_ORDER
except (TypeError, ValueError):  # pragma: no cover
    _READABLE_SPAN_POSITIONAL = False


def _trace_state(header: str, cache: Dict[str, TraceState]) -> TraceState:
    state = cache.get(header)
    if state is None:
        state = TraceState.from_header([header]) if header else TraceState()
        cache[header] = state
    return state


#: A span attribute the sidecar sets on a user job's spans (sidecar/reading.py): the span is exported with the
#: resource's ``service.name`` replaced by its value (the job's spans belong to the job, not the glidein).
SERVICE_KEY = "gwtrace.service.name"


def _service_resource(attrs: Dict[str, Any], resource: Resource, services: Dict[str, Resource]) -> Resource:
    """``resource`` with the ``service.name`` the span's ``SERVICE_KEY`` names (the key taken out of ``attrs``)."""
    service = str(attrs.pop(SERVICE_KEY))
    found = services.get(service)
    if found is None:
        found = services[service] = hashed_resource(resource.merge(Resource({"service.name": service})))
    return found


#: The job wrapper's attribute on a job sampled under an unsampled parent (the root of its own trace):
#: exported as a link to that parent's context as well (docs/shim.md).
UNSAMPLED_PARENT_KEY = "gwtrace.unsampled_parent.traceparent"


def _links(value: object) -> Tuple[Link, ...]:
    """A link to the context a traceparent value names (wire/traceparent.py's rule); none for anything else."""
    parent = traceparent.parse(value)
    if parent is None:
        return ()
    return (Link(SpanContext(int(parent.trace_id, 16), int(parent.span_id, 16), True,
                             TraceFlags(parent.flags & traceparent.SAMPLED)), {"gwtrace.link": "unsampled_parent"}),)


def to_readable_spans(records: Sequence[SpanRecord], resource: Resource) -> List[ReadableSpan]:
    """Build SDK spans carrying exactly the ids, parents and times bash chose (a span with ``SERVICE_KEY``:
    the resource with that ``service.name``). The attribute dicts are handed over as plain dicts: the
    assembler already bounded them (MAX_ATTRIBUTES) and every value is a str, int or bool, so the SDK's
    BoundedAttributes validation would only repeat that work.
    """
    resource = hashed_resource(resource)
    services: Dict[str, Resource] = {}
    span_context = _span_context
    positional = _READABLE_SPAN_POSITIONAL
    out = []
    append = out.append
    states: Dict[str, TraceState] = {}
    trace_ints: Dict[str, int] = {}       # a batch holds few traces
    errors: Dict[str, Status] = {}        # and few distinct error messages
    parents: Dict[Tuple[str, str, bool, int, str], SpanContext] = {}   # siblings share their parent's
    for r in records:
        tid = trace_ints.get(r.trace_id)
        if tid is None:
            tid = trace_ints[r.trace_id] = int(r.trace_id, 16)
        flags = _FLAGS[r.flags & 0x01]
        state = states.get(r.tracestate)
        if state is None:
            state = _trace_state(r.tracestate, states)
        ctx = span_context(tid, int(r.span_id, 16), False, flags, state)
        parent = None
        if r.parent_id:
            pkey = (r.trace_id, r.parent_id, r.parent_remote, r.flags, r.tracestate)
            parent = parents.get(pkey)
            if parent is None:
                parent = parents[pkey] = span_context(tid, int(r.parent_id, 16), r.parent_remote, flags, state)
        if r.status == "ok":
            status = _STATUS_OK
        elif r.status == "error":
            if r.status_message:
                status = errors.get(r.status_message)
                if status is None:
                    status = errors[r.status_message] = Status(StatusCode.ERROR, r.status_message)
            else:
                status = _STATUS_ERROR
        else:
            status = _STATUS_UNSET
        attrs = dict(r.attributes, **{"process.pid": r.pid})
        span_resource = resource if SERVICE_KEY not in attrs else _service_resource(attrs, resource, services)
        if r.dropped_attributes:
            attrs["gwtrace.dropped_attributes"] = r.dropped_attributes
        if r.dropped_events:
            attrs["gwtrace.dropped_events"] = r.dropped_events
        events = [SdkEvent(name, attributes=a, timestamp=ts * 1000) for name, ts, a in r.events] \
            if r.events else ()
        links = _links(attrs[UNSAMPLED_PARENT_KEY]) if UNSAMPLED_PARENT_KEY in attrs else ()
        if positional:
            append(ReadableSpan(r.name, ctx, parent, span_resource, attrs, events, links, _INTERNAL, None, status,
                                r.start_us * 1000, r.end_us * 1000, SCOPE))
        else:                  # an SDK whose ReadableSpan takes other parameters
            append(ReadableSpan(
                name=r.name, context=ctx, parent=parent, resource=span_resource, attributes=attrs,
                events=events, links=links, kind=_INTERNAL, start_time=r.start_us * 1000,
                end_time=r.end_us * 1000, status=status, instrumentation_scope=SCOPE))
    return out


def make_otlp_exporter(env: Optional[Dict[str, str]] = None) -> Tuple[SpanExporter, RecordingSession, str]:
    """The SDK's OTLP/HTTP exporter, every setting passed from otlpenv (the SDK reads none itself)."""
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    settings = otlp_env(env)
    session = RecordingSession()
    exporter = OTLPSpanExporter(
        endpoint=settings.endpoint, certificate_file=settings.certificate,
        client_key_file=settings.client_key, client_certificate_file=settings.client_certificate,
        headers=settings.headers, timeout=settings.timeout_s, session=session,
        compression=Compression.Gzip if settings.compression == "gzip" else Compression.NoCompression)
    # Delivery reports every outcome itself, once per change (sidecar.py);
    # the SDK would add a line per attempt, traceback-long.
    for name in ("opentelemetry.exporter.otlp.proto.http", "opentelemetry.exporter.otlp.common"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    return exporter, session, settings.endpoint


#: Outcome reasons that mean "nobody there" (EndpointUnreachable).
UNREACHABLE = frozenset(("connection_refused", "connection", "bad_endpoint"))
#: Status codes OTLP says to retry (opentelemetry-proto docs/specification.md).
RETRYABLE_STATUS = frozenset((429, 502, 503, 504))
MAX_RETRY_AFTER_S = 600.0


class Outcome(NamedTuple):
    """What one delivery attempt means for the batch."""

    delivered: bool
    retryable: bool = True
    reason: str = ""                      # e.g. "http_503", "http_400", "connection_refused"
    retry_after: Optional[float] = None   # seconds, from a Retry-After header
    message: str = ""                     # for a person: "connection refused", "HTTP 503"

    @property
    def unreachable(self) -> bool:
        """The collector plainly cannot be reached: waiting will not help now."""
        return self.reason in UNREACHABLE


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """Retry-After as delay-seconds or an HTTP-date (RFC 9110), capped."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


class Delivery:
    """A SpanExporter plus what its failures mean.

    ``SpanExporter.export`` only says SUCCESS or FAILURE; the outbox needs to
    know whether to retry (429/502/503/504, connection errors, time-outs, a
    busy store), when (Retry-After), or to set the batch aside (other 4xx and
    5xx: the collector will never take it).
    """

    #: True for a delivery that sends nothing from the node: spans wait in the
    #: outbox and ride home in the glidein's output at stop (``--ship-to``).
    holds = False

    def __init__(self, exporter: SpanExporter, destination: str,
                 session: Optional[RecordingSession] = None) -> None:
        self.exporter = exporter
        self.destination = destination
        self.session = session

    def send(self, spans: Sequence[ReadableSpan]) -> Outcome:
        if self.session is not None:
            self.session.last_status = None
            self.session.last_retry_after = None
            self.session.last_error = None
        try:
            result = self.exporter.export(spans)
        except EndpointUnreachable as exc:      # an SDK that lets it through
            return Outcome(False, True, exc.reason, message=str(exc))
        except Exception as exc:  # noqa: BLE001 - exporter bugs must not stop delivery
            log.error("export raised %s: %s", type(exc).__name__, exc)
            return Outcome(False, True, "exception", message=f"{type(exc).__name__}: {exc}")
        if result == SpanExportResult.SUCCESS:
            return Outcome(True)
        status = self.session.last_status if self.session is not None else None
        if status is None:
            if self.session is None:
                return Outcome(False, True, "store", message="the embedded store failed")
            error = self.session.last_error
            if error is not None:
                return Outcome(False, True, error.reason, message=str(error))
            return Outcome(False, True, "connection", message="no answer")
        retry_after = parse_retry_after(self.session.last_retry_after)
        if status in RETRYABLE_STATUS:
            return Outcome(False, True, f"http_{status}", retry_after, f"HTTP {status}")
        if 400 <= status < 600:
            return Outcome(False, False, f"http_{status}", message=f"HTTP {status}")
        return Outcome(False, True, f"http_{status}", retry_after, f"HTTP {status}")

    def shutdown(self) -> None:
        self.exporter.shutdown()


class _NoExporter(SpanExporter):
    """The exporter of a ship-home-only sidecar: it is never asked to export."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        pass


class ShipHomeDelivery(Delivery):
    """``GWTRACE_EXPORT=ship-home``: a worker node with no collector to reach.

    Nothing is sent from the node and nothing is stored in the glidein's
    directory (it is deleted with the glidein): spans wait in the outbox and
    `sidecar stop --ship-to` (or SIGTERM of a sidecar started with it) writes
    them into the glidein's .err, where `gwtrace ingest` finds them.
    """

    holds = True

    def __init__(self, why: str = "GWTRACE_EXPORT=ship-home") -> None:
        super().__init__(_NoExporter(), f"ship home at stop ({why})")

    def send(self, spans: Sequence[ReadableSpan]) -> Outcome:
        return Outcome(False, True, "ship_home", message="no collector on this node: spans ride home at stop")
