"""SpanRecord -> ReadableSpan: the shortcuts in to_readable_spans change no byte of the OTLP request."""

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event as SdkEvent
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState

from gwtrace.wire.span import SpanRecord
from gwtrace.export.otlp import SCOPE, to_readable_spans

T1, T2 = "4bf92f3577b34da6a3ce929d0e0e4736", "0af7651916cd43dd8448eb211c80319c"


def reference(records, resource):
    """Every SDK object built afresh for every span, with keyword arguments."""
    out = []
    for r in records:
        tid = int(r.trace_id, 16)
        flags = TraceFlags(r.flags & 0x01)
        state = TraceState.from_header([r.tracestate]) if r.tracestate else TraceState()
        ctx = SpanContext(tid, int(r.span_id, 16), is_remote=False, trace_flags=flags, trace_state=state)
        parent = None
        if r.parent_id:
            parent = SpanContext(tid, int(r.parent_id, 16), is_remote=r.parent_remote, trace_flags=flags,
                                 trace_state=state)
        if r.status == "ok":
            status = Status(StatusCode.OK)
        elif r.status == "error":
            status = Status(StatusCode.ERROR, r.status_message or None)
        else:
            status = Status(StatusCode.UNSET)
        attrs = dict(r.attributes)
        attrs["process.pid"] = r.pid
        if r.dropped_attributes:
            attrs["gwtrace.dropped_attributes"] = r.dropped_attributes
        if r.dropped_events:
            attrs["gwtrace.dropped_events"] = r.dropped_events
        events = [SdkEvent(name, attributes=a, timestamp=ts * 1000) for name, ts, a in r.events]
        out.append(ReadableSpan(name=r.name, context=ctx, parent=parent, resource=resource, attributes=attrs,
                                events=events, kind=SpanKind.INTERNAL, start_time=r.start_us * 1000,
                                end_time=r.end_us * 1000, status=status, instrumentation_scope=SCOPE))
    return out


def records():
    out = []
    for i in range(40):
        trace = T1 if i % 3 else T2
        out.append(SpanRecord(
            trace, f"{i + 1:016x}", "" if i % 7 == 0 else f"{i % 4 + 100:016x}", i % 5 == 0, 1 if i % 11 else 0,
            "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE" if i % 6 == 0 else "", f"step {i}",
            1_700_000_000_000_000 + i, 4000 + i % 3, 1_700_000_000_000_500 + i,
            ("ok", "error", "unset", "error")[i % 4], "exit code 3" if i % 8 == 1 else "",
            {"i": i, "ok": bool(i % 2), "s": f"v{i}"},
            [("tick", 1_700_000_000_000_100 + i, {"n": i})] if i % 4 == 2 else [],
            dropped_attributes=i % 9 == 0, dropped_events=2 if i % 10 == 0 else 0))
    return out


def test_shared_sdk_objects_encode_exactly_like_fresh_ones():
    resource = Resource({"service.name": "glidein", "host.name": "wn042"})
    recs = records()
    got = encode_spans(to_readable_spans(recs, resource))
    want = encode_spans(reference(recs, resource))
    assert got == want
    assert got.SerializeToString() == want.SerializeToString()
    spans = [s for rs in got.resource_spans for ss in rs.scope_spans for s in ss.spans]
    assert len(spans) == len(recs)
    assert {s.status.message for s in spans} == {"", "exit code 3"}


def test_hashed_resource_is_the_same_resource():
    from gwtrace.export.otlp import hashed_resource

    plain = Resource({"service.name": "glidein", "host.name": "wn042", "glidein.cores": 8}, "https://x/1.0")
    hashed = hashed_resource(plain)
    assert hashed == plain and plain == hashed and hash(hashed) == hash(plain)
    assert dict(hashed.attributes) == dict(plain.attributes) and hashed.schema_url == plain.schema_url
    assert hashed_resource(hashed) is hashed


def test_span_contexts_built_as_tuples_equal_the_constructors(monkeypatch):
    import random

    import gwtrace.export.otlp as exporter

    assert exporter._span_context is not SpanContext     # this SDK passes the start-up probe
    rng = random.Random(7)
    for _ in range(200):
        args = (rng.choice([0, 1, rng.getrandbits(128), 2**128 - 1, 2**128]),
                rng.choice([0, 1, rng.getrandbits(64), 2**64 - 1, 2**64]), rng.random() < 0.5,
                TraceFlags(rng.choice([0, 1])), TraceState() if rng.random() < 0.5 else TraceState([("k", "v")]))
        fast, slow = exporter._span_context(*args), SpanContext(*args)
        assert fast == slow and fast.is_valid == slow.is_valid and type(fast) is SpanContext
    # Keyword arguments (an SDK whose ReadableSpan signature differs) build the same request.
    resource = Resource({"service.name": "glidein"})
    recs = records()
    positional = encode_spans(to_readable_spans(recs, resource))
    monkeypatch.setattr(exporter, "_READABLE_SPAN_POSITIONAL", False)
    monkeypatch.setattr(exporter, "_span_context", SpanContext)
    assert encode_spans(to_readable_spans(recs, resource)) == positional
