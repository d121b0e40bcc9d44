"""store.limits: OpenTelemetry's span limits applied at ingest, and the bounds checked before decoding."""

from __future__ import annotations

import io
import random
import sys
import time
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

import synthetic
from gwtrace.cli.show import show
from gwtrace.server import create_app
from gwtrace.store import TraceStore, limits
from test_store import TRACE_A, make_request

sys.path.insert(0, str(Path(__file__).resolve().parent / "abuse"))

MARK = {"key": "gwtrace.truncated", "type": "bool", "value": True}


def one_span(**extra):
    req = make_request([dict(span=1, name="glidein", dur=5000)])
    span = req.resource_spans[0].scope_spans[0].spans[0]
    return req, span


def add_attrs(holder, n, prefix="k"):
    for i in range(n):
        kv = holder.attributes.add()
        kv.key = f"{prefix}{i}"
        kv.value.int_value = i


def test_a_real_batch_is_left_as_it_is():
    req = synthetic.glidein_trace(random.Random(3), time.time_ns(), uuid="u", site="CERN", n_jobs=30)
    before = req.SerializeToString()
    assert limits.enforce(req) == 0
    assert req.SerializeToString() == before


def test_attributes_events_and_links_are_cut_to_128_and_marked():
    req, span = one_span()
    add_attrs(span, 500)
    for i in range(300):
        event = span.events.add(name=f"e{i}", time_unix_nano=span.start_time_unix_nano)
        if i == 0:
            add_attrs(event, 200)
    for i in range(200):
        link = span.links.add(trace_id=TRACE_A, span_id=(i + 5).to_bytes(8, "big"))
        if i == 0:
            add_attrs(link, 129)
    assert limits.enforce(req) == 1
    assert len(span.attributes) == 128
    assert span.attributes[-1].key == "gwtrace.truncated" and span.attributes[-1].value.bool_value
    assert [kv.key for kv in span.attributes[:3]] == ["k0", "k1", "k2"]   # the first ones are kept
    assert span.dropped_attributes_count == 500 - 127
    assert len(span.events) == 128 and span.dropped_events_count == 172
    assert len(span.events[0].attributes) == 128 and span.events[0].dropped_attributes_count == 72
    assert len(span.links) == 128 and span.dropped_links_count == 72
    assert len(span.links[0].attributes) == 128 and span.links[0].dropped_attributes_count == 1


def test_long_keys_and_values_are_cut():
    req, span = one_span()
    kv = span.attributes.add()
    kv.key = "k" * 20_000
    kv.value.string_value = "v" * 1_000_000
    blob = span.attributes.add(key="blob")
    blob.value.bytes_value = b"\0" * 50_000
    arr = span.attributes.add(key="array")
    for _ in range(100_000):
        arr.value.array_value.values.add().bool_value = True
    span.status.message = "m" * 30_000
    span.events.add(name="e" * 50_000)
    assert limits.enforce(req, [[req.resource_spans[0].scope_spans[0].SerializeToString()]]) == 1
    assert len(span.events[0].name) == limits.MAX_VALUE_BYTES
    assert len(span.attributes[0].key) == limits.MAX_VALUE_BYTES
    assert len(span.attributes[0].value.string_value) == limits.MAX_VALUE_BYTES
    assert len(span.attributes[1].value.bytes_value) == limits.MAX_VALUE_BYTES
    assert 0 < arr.value.ByteSize() <= limits.MAX_VALUE_BYTES + 16
    assert len(span.status.message) == limits.MAX_VALUE_BYTES
    assert span.attributes[-1].key == "gwtrace.truncated"
    assert span.ByteSize() < 6 * limits.MAX_VALUE_BYTES


def test_long_span_names_are_cut_where_the_store_reads_them(tmp_path):
    req, span = one_span()
    span.name = "n" * 100_000
    with TraceStore(tmp_path / "t.db") as store:
        _, _, message = store.ingest(req, req.SerializeToString())
        assert "cut 1 span(s)" in message
        stored = store.get_trace(TRACE_A)[0]
        assert store.operations("glidein") == [("n" * limits.MAX_NAME_CHARS, 1)]
    assert stored["name"] == "n" * limits.MAX_NAME_CHARS and stored["attributes"]["gwtrace.truncated"] is True


@pytest.mark.parametrize("with_bytes", [True, False])
def test_one_hostile_span_among_real_ones_is_found(with_bytes):
    """From the encoded bytes (the server's path) or the decoded spans alone (the others), the one span over
    a limit is found among real ones and only it is cut."""
    req = synthetic.glidein_trace(random.Random(5), time.time_ns(), uuid="u", site="CERN", n_jobs=30)
    ss = req.resource_spans[0].scope_spans[0]
    add_attrs(ss.spans[7], 300)
    ss.spans[11].attributes.add(key="big").value.string_value = "x" * 100_000
    raws = [[s.SerializeToString() for s in rs.scope_spans] for rs in req.resource_spans] if with_bytes else None
    assert limits.enforce(req, raws) == 2
    assert len(ss.spans[7].attributes) == 128 and len(ss.spans[11].attributes[-2].value.string_value) == 8192
    marked = [i for i, s in enumerate(ss.spans) if any(kv.key == "gwtrace.truncated" for kv in s.attributes)]
    assert marked == [7, 11]


def test_the_resource_is_cut_and_marked_too():
    req, _ = one_span()
    resource = req.resource_spans[0].resource
    add_attrs(resource, 1000, "r")
    assert limits.enforce(req) == 1
    assert len(resource.attributes) == 128
    assert resource.attributes[-1].key == "gwtrace.truncated"
    assert resource.attributes[0].key == "service.name"


def test_too_many_spans_in_one_request_is_refused():
    req = ExportTraceServiceRequest()
    ss = req.resource_spans.add().scope_spans.add()
    for _ in range(limits.MAX_SPANS_PER_REQUEST + 1):
        ss.spans.add()
    with pytest.raises(limits.TooLarge, match="send smaller batches"):
        limits.enforce(req)


def test_the_store_cuts_what_it_ingests_and_says_so(tmp_path):
    req, span = one_span()
    add_attrs(span, 1000)
    with TraceStore(tmp_path / "t.db") as store:
        accepted, rejected, message = store.ingest(req, req.SerializeToString())
        assert (accepted, rejected) == (1, 0)
        assert "cut 1 span(s)" in message and "gwtrace.truncated" in message
        stored = store.get_trace(TRACE_A)[0]
    assert len(stored["attributes"]) == 128 and stored["attributes"]["gwtrace.truncated"] is True


def test_the_server_reports_a_cut_as_a_warning(tmp_path):
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    req, span = one_span()
    add_attrs(span, 1000)
    with TraceStore(tmp_path / "t.db") as store:
        client = create_app(store).test_client()
        resp = client.post("/v1/traces", data=req.SerializeToString(),
                           headers={"Content-Type": "application/x-protobuf"})
        assert resp.status_code == 200
        answer = ExportTraceServiceResponse.FromString(resp.data)
        assert answer.partial_success.rejected_spans == 0
        assert "gwtrace.truncated" in answer.partial_success.error_message
        span_json = client.get(f"/api/traces/{TRACE_A.hex()}").json["data"][0]["spans"][0]
        assert MARK in span_json["tags"]


@pytest.mark.parametrize("shape, element", [
    (b"\x4a\x00", 52), (b"\x5a\x00", 60), (b"\x6a\x00", 84), (b"\x4a\x02\x12\x00", 80),
])
def test_decode_cost_bounds_what_decoding_takes(shape, element):
    """decode_cost is at least what upb was measured to take per element (tests/abuse measures RSS)."""
    from abuse_harness import request_of_span, span_head

    raw = request_of_span(span_head() + shape * 10_000)
    assert limits.decode_cost(raw) >= 10_000 * element


def test_decode_cost_of_a_real_batch_is_a_few_times_its_size():
    req = synthetic.glidein_trace(random.Random(3), time.time_ns(), uuid="u", site="CERN", n_jobs=30)
    raw = req.SerializeToString()
    assert 1 < limits.decode_cost(raw) / len(raw) < 40


@pytest.mark.parametrize("body, problem", [
    (b"[" * 100_000 + b"]" * 100_000, True),
    (b"[" * 65 + b"]" * 65, True),
    (b"[" * 64 + b"]" * 64, False),
    (b'{"a": "[[[["}', False),
    (b"[]" * 1000, False),
    (b"]]]][[[[", False),      # unbalanced: json.loads says where
])
def test_json_depth(body, problem):
    assert (limits.json_depth_problem(body) is not None) is problem


def test_json_cost_grows_with_containers():
    assert limits.json_cost(b"[" + b"{}," * 100_000 + b"{}]") > 100_000 * 140


# ------------------------------------------------------------------ reading back


def store_without_limits(path, requests):
    """A store holding ``requests`` as a gwtrace before the ingest limits would have stored them."""
    store = TraceStore(path)
    real = limits.enforce
    limits.enforce = lambda request, raws=None: 0
    try:
        for req in requests:
            store.ingest(req, req.SerializeToString())
    finally:
        limits.enforce = real
    return store


def test_a_trace_stored_before_the_limits_is_refused_not_decoded(tmp_path):
    """A chunk of 3 million empty attributes (6 MB, ~290 MB to decode) is not read: one line, at once."""
    from abuse_harness import empty_attributes_body

    req = ExportTraceServiceRequest.FromString(empty_attributes_body(3_000_000))
    trace_hex = req.resource_spans[0].scope_spans[0].spans[0].trace_id.hex()
    with store_without_limits(tmp_path / "old.db", [req]) as store:
        client = create_app(store).test_client()
        began = time.monotonic()
        for path in (f"/api/traces/{trace_hex}", f"/api/v3/traces/{trace_hex}", f"/ui/api/critical/{trace_hex}"):
            resp = client.get(path)
            assert resp.status_code == 413, (path, resp.status_code)
            assert "more than one answer may decode" in resp.get_data(as_text=True)
        assert time.monotonic() - began < 2
    with pytest.raises(LookupError, match="not read"):
        show(trace_hex, False, str(tmp_path / "old.db"), io.StringIO())


def test_a_trace_too_big_for_one_answer_is_cut_with_a_warning(tmp_path, monkeypatch):
    from gwtrace.store import reader

    monkeypatch.setattr(reader, "MAX_READ_SPANS", 50)
    requests = [make_request([dict(span=100 * batch + i + 1) for i in range(20)]) for batch in range(5)]
    with TraceStore(tmp_path / "big.db") as store:
        for req in requests:
            store.ingest(req)
        client = create_app(store).test_client()
        trace = client.get(f"/api/traces/{TRACE_A.hex()}").json["data"][0]
        assert len(trace["spans"]) == 40
        assert trace["warnings"] == ["trace cut: 60 span(s) not read, the answer would hold more spans than one "
                                     "answer holds"]
        v3 = client.get(f"/api/v3/traces/{TRACE_A.hex()}").json
        assert v3["warnings"] and len(v3["result"]["resourceSpans"][0]["scopeSpans"][0]["spans"]) == 40
        assert client.get("/ui/api/glidein/u-1").json["warnings"]
        assert len(store.get_trace(TRACE_A)) == 40 and store.get_trace(TRACE_A).cut
        search = client.get("/api/traces", query_string={"service": "glidein", "traceID": [TRACE_A.hex()] * 2}).json
        assert len(search["data"]) == 1 and search["errors"][0]["code"] == 413
