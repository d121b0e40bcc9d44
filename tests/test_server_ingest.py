"""OTLP/HTTP ingest at POST /v1/traces: encodings, compression, errors, partial success, auth."""

from __future__ import annotations

import gzip
import json
import sqlite3
import zlib

import pytest
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

import metrics_gen
from gwtrace.server import create_app
from gwtrace.store import TraceStore
from test_store import TRACE_A, TRACE_B, damaged_store, make_request, sid

PB = "application/x-protobuf"
JSON = "application/json"


@pytest.fixture
def store(tmp_path):
    s = TraceStore(tmp_path / "traces.db")
    yield s
    s.close()


@pytest.fixture
def client(store):
    return create_app(store).test_client()


def post(client, body, content_type=PB, **headers):
    return client.post("/v1/traces", data=body, headers={"Content-Type": content_type, **headers})


def pb_response(resp):
    assert resp.mimetype == PB
    out = ExportTraceServiceResponse()
    out.ParseFromString(resp.data)
    return out


def pb_status(resp):
    assert resp.mimetype == PB
    st = status_pb2.Status()
    st.ParseFromString(resp.data)
    return st


def two_spans():
    return make_request([dict(span=1, name="glidein", dur=5000), dict(span=2, parent=1, name="child", start=10)])


# An OTLP/JSON body as the specification writes it: hex ids, integer enums,
# int64 as strings, lowerCamelCase, plus a field this receiver does not know.
OTLP_JSON = {
    "resourceSpans": [{
        "resource": {"attributes": [
            {"key": "service.name", "value": {"stringValue": "json-svc"}},
            {"key": "glidein.site", "value": {"stringValue": "SITE_J"}},
        ]},
        "scopeSpans": [{
            "scope": {"name": "curl", "version": "1"},
            "spans": [
                {"traceId": "5B8EFFF798038103D269B633813FC60C", "spanId": "EEE19B7EC3C1B174",
                 "name": "job", "kind": 2, "startTimeUnixNano": "1544712660000000000",
                 "endTimeUnixNano": "1544712661000000000",
                 "attributes": [{"key": "rc", "value": {"intValue": "3"}},
                                {"key": "ok", "value": {"boolValue": False}}],
                 "events": [{"timeUnixNano": "1544712660500000000", "name": "checkpoint",
                             "attributes": [{"key": "n", "value": {"doubleValue": 1.5}}]}],
                 "status": {"code": 2, "message": "boom"},
                 "futureField": {"ignored": True}},
                {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b175",
                 "parentSpanId": "eee19b7ec3c1b174", "name": "step", "kind": 1,
                 "startTimeUnixNano": 1544712660100000000, "endTimeUnixNano": 1544712660200000000},
            ],
        }],
    }],
}


def test_protobuf_is_stored_and_answered_in_protobuf(client, store):
    resp = post(client, two_spans().SerializeToString())
    assert resp.status_code == 200
    assert not pb_response(resp).HasField("partial_success")
    assert [s["name"] for s in store.get_trace(TRACE_A)] == ["glidein", "child"]


def test_application_protobuf_alias_is_accepted(client, store):
    assert post(client, two_spans().SerializeToString(), "application/protobuf").status_code == 200
    assert store.span_count() == 2


def test_otlp_json_is_stored_and_answered_in_json(client, store):
    resp = post(client, json.dumps(OTLP_JSON), "application/json; charset=utf-8")
    assert resp.status_code == 200 and resp.mimetype == JSON
    assert resp.get_json() == {}
    spans = store.get_trace("5b8efff798038103d269b633813fc60c")
    assert [s["name"] for s in spans] == ["job", "step"]
    job, step = spans
    assert (job["kind"], job["status_code"], job["status_message"]) == (2, 2, "boom")
    assert job["start_ns"] == 1544712660000000000 and job["end_ns"] == 1544712661000000000
    assert job["attributes"] == {"rc": 3, "ok": False}
    assert job["events"] == [{"name": "checkpoint", "time_ns": 1544712660500000000, "attributes": {"n": 1.5}}]
    assert job["resource"] == {"service.name": "json-svc", "glidein.site": "SITE_J"}
    assert step["parent_span_id"] == "eee19b7ec3c1b174"


@pytest.mark.parametrize("content_type", [PB, JSON])
def test_gzip_bodies(client, store, content_type):
    raw = two_spans().SerializeToString() if content_type == PB else json.dumps(OTLP_JSON).encode()
    resp = post(client, gzip.compress(raw), content_type, **{"Content-Encoding": "gzip"})
    assert resp.status_code == 200 and resp.mimetype == content_type
    assert store.span_count() == 2


def test_deflate_body(client, store):
    resp = post(client, zlib.compress(two_spans().SerializeToString()), PB, **{"Content-Encoding": "deflate"})
    assert resp.status_code == 200
    assert store.span_count() == 2


def test_unknown_content_type_is_415(client, store):
    resp = post(client, b"hello", "text/plain")
    assert resp.status_code == 415
    assert b"application/x-protobuf" in resp.data
    assert post(client, b"", "").status_code == 415
    assert store.span_count() == 0


def test_unknown_content_encoding_is_415(client):
    resp = post(client, b"xx", PB, **{"Content-Encoding": "br"})
    assert resp.status_code == 415
    assert "Content-Encoding" in pb_status(resp).message


def test_garbage_protobuf_is_400_with_a_status(client, store):
    resp = post(client, b"\xff\xff\xff\xff not protobuf")
    assert resp.status_code == 400
    assert "not an OTLP ExportTraceServiceRequest" in pb_status(resp).message
    assert store.span_count() == 0


@pytest.mark.parametrize("body, needle", [
    (b"{not json", "not JSON"),
    (b"[1, 2]", "JSON object"),
    (json.dumps({"resourceSpans": {"a": 1}}).encode(), "must be an array"),
    (json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{"name": 5, "traceId": "00"}]}]}]}).encode(),
     "not OTLP/JSON"),
])
def test_bad_json_is_400_with_a_json_status(client, store, body, needle):
    resp = post(client, body, JSON)
    assert resp.status_code == 400 and resp.mimetype == JSON
    doc = resp.get_json()
    assert doc["code"] == 3 and needle in doc["message"]
    assert store.span_count() == 0


def test_corrupt_gzip_is_400(client):
    resp = post(client, gzip.compress(b"x" * 100)[:-8] + b"garbage!", PB, **{"Content-Encoding": "gzip"})
    assert resp.status_code == 400
    assert "decompress" in pb_status(resp).message


def test_oversized_body_is_413(store):
    client = create_app(store, max_body_bytes=2000).test_client()
    big = make_request([dict(span=i + 1, name="x" * 50) for i in range(100)]).SerializeToString()
    assert len(big) > 2000
    resp = post(client, big)
    assert resp.status_code == 413
    assert "exceeds 2000" in pb_status(resp).message
    assert store.span_count() == 0


def test_decompressed_size_is_capped_too(store):
    client = create_app(store, max_body_bytes=100_000).test_client()
    bomb = gzip.compress(b"\0" * 5_000_000)  # ~5 KB on the wire, 5 MB inflated
    assert len(bomb) < 100_000
    resp = post(client, bomb, PB, **{"Content-Encoding": "gzip"})
    assert resp.status_code == 413
    assert "decompressed" in pb_status(resp).message


def test_partial_success_in_protobuf(client, store):
    req = make_request([dict(span=1, name="good"), dict(span=bytes(8), name="zero id"),
                        dict(trace=b"\x01" * 3, span=3, name="short trace")])
    resp = post(client, req.SerializeToString())
    assert resp.status_code == 200
    ps = pb_response(resp).partial_success
    assert ps.rejected_spans == 2
    assert "span_id must be 8 bytes" in ps.error_message and "trace_id must be 16 bytes" in ps.error_message
    assert [s["name"] for s in store.get_trace(TRACE_A)] == ["good"]


def test_partial_success_in_json(client, store):
    doc = json.loads(json.dumps(OTLP_JSON))
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans.append(dict(spans[1], spanId="zz-not-hex"))
    spans.append(dict(spans[1], spanId="0000000000000000"))
    resp = post(client, json.dumps(doc), JSON)
    assert resp.status_code == 200
    ps = resp.get_json()["partialSuccess"]
    assert ps["rejectedSpans"] == "2"  # int64 as a string, as OTLP/JSON says
    assert "spans[2].spanId is not hex" in ps["errorMessage"]
    assert "span_id must be 8 bytes" in ps["errorMessage"]
    assert store.span_count() == 2


def test_empty_request_is_a_success(client):
    resp = post(client, ExportTraceServiceRequest().SerializeToString())
    assert resp.status_code == 200
    assert not pb_response(resp).HasField("partial_success")
    assert post(client, b"{}", JSON).get_json() == {}


def test_resent_batch_does_not_duplicate(client, store):
    body = two_spans().SerializeToString()
    for _ in range(3):
        assert post(client, body).status_code == 200
    assert store.span_count() == 2


def test_busy_store_is_503_with_retry_after(client, store, tmp_path):
    store._connections.writer().execute("PRAGMA busy_timeout = 50")  # the connection every write uses
    blocker = sqlite3.connect(tmp_path / "traces.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        resp = post(client, two_spans().SerializeToString())
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert resp.status_code == 503
    assert resp.headers["Retry-After"] == "5"
    assert "busy or unavailable" in pb_status(resp).message
    # Retrying, as an exporter does for 503, stores the batch.
    assert post(client, two_spans().SerializeToString()).status_code == 200
    assert store.span_count() == 2


def test_damaged_store_is_503_with_retry_after_never_500(tmp_path):
    """A store whose pages are damaged: exporters are told to retry later, readers get a JSON error."""
    with TraceStore(damaged_store(tmp_path / "traces.db")) as store:
        client = create_app(store).test_client()
        resp = post(client, two_spans().SerializeToString())
        assert resp.status_code == 503 and resp.headers["Retry-After"] == "5"
        assert "malformed" in pb_status(resp).message
        resp = post(client, json.dumps(OTLP_JSON), JSON)
        assert resp.status_code == 503 and resp.get_json()["code"] == 14  # UNAVAILABLE
        resp = client.get(f"/api/traces/{TRACE_A.hex()}")
        assert resp.status_code == 503 and resp.headers["Retry-After"] == "5"
        assert "malformed" in resp.get_json()["errors"][0]["msg"]


@pytest.mark.parametrize("path", ["/v1/traces", "/v1/metrics"])
def test_traces_and_metrics_are_received_alike(tmp_path, path):
    """Both signals go through one receiving path (``otlp_http.receive_export``): the same 415 for a media
    type neither takes, the same 503 with Retry-After for a damaged store, in the request's content type."""
    body = (two_spans() if path == "/v1/traces" else
            metrics_gen.request([metrics_gen.subject(metrics_gen.resource(), rss=metrics_gen.series_of([0], [1.0]))]))
    with TraceStore(damaged_store(tmp_path / "traces.db")) as store:
        client = create_app(store).test_client()
        resp = client.post(path, data=body.SerializeToString(), headers={"Content-Type": "text/plain"})
        assert resp.status_code == 415 and b"send application/x-protobuf or application/json" in resp.data
        resp = client.post(path, data=body.SerializeToString(), headers={"Content-Type": PB})
        assert resp.status_code == 503 and resp.headers["Retry-After"] == "5"
        assert "trace store busy or unavailable" in pb_status(resp).message


def test_token_protects_ingest_and_reads(store):
    client = create_app(store, token="s3cret").test_client()
    body = two_spans().SerializeToString()
    resp = post(client, body)
    assert resp.status_code == 401 and resp.headers["WWW-Authenticate"].startswith("Bearer")
    assert "bearer token" in pb_status(resp).message
    assert post(client, body, Authorization="Bearer wrong").status_code == 401
    assert post(client, json.dumps(OTLP_JSON), JSON).get_json()["code"] == 16
    assert store.span_count() == 0
    assert post(client, body, Authorization="Bearer s3cret").status_code == 200
    assert client.get("/api/services").status_code == 401
    assert client.get(f"/api/traces/{TRACE_A.hex()}").status_code == 401
    assert client.get("/ui/api/search").status_code == 401
    ok = client.get("/api/services", headers={"Authorization": "Bearer s3cret"})
    assert ok.status_code == 200 and ok.get_json()["data"] == ["glidein"]
    # Page shells and static files carry no trace data and stay reachable.
    assert client.get("/").status_code == 200
    assert client.get(f"/trace/{TRACE_A.hex()}").status_code == 200
    assert client.get("/static/common.js").status_code == 200


def test_mixed_traces_and_resources_in_one_request(client, store):
    req = make_request([dict(trace=TRACE_A, span=1), dict(trace=TRACE_B, span=2)])
    other = make_request([dict(trace=TRACE_B, span=3, parent=2, name="job")], resource={"service.name": "job"})
    req.resource_spans.extend(other.resource_spans)
    assert post(client, req.SerializeToString()).status_code == 200
    assert len(store.get_trace(TRACE_A)) == 1
    assert {s["service"] for s in store.get_trace(TRACE_B)} == {"glidein", "job"}
    assert store.get_trace(TRACE_B)[1]["parent_span_id"] == sid(2).hex()


def test_ingest_answers_carry_the_apps_common_headers(client):
    """POST /v1/traces is answered before Flask (IngestMiddleware): same headers as every other answer."""
    for resp in (post(client, two_spans().SerializeToString()), post(client, b"\xff\xff", PB)):
        assert resp.headers["X-Content-Type-Options"] == "nosniff"
        assert resp.headers["Referrer-Policy"] == "no-referrer"
        assert resp.headers["Content-Length"] == str(len(resp.data))
    assert resp.status_code == 400 and resp.mimetype == PB


def test_other_methods_on_the_ingest_path_are_405(client, store):
    resp = client.get("/v1/traces")
    assert resp.status_code == 405 and "not allowed" in resp.get_json()["errors"][0]["msg"]
    assert resp.headers["Allow"] == "POST" and resp.headers["X-Content-Type-Options"] == "nosniff"
    guarded = create_app(store, token="s3cret").test_client()
    assert guarded.get("/v1/traces").status_code == 401
    assert guarded.get("/v1/traces", headers={"Authorization": "Bearer s3cret"}).status_code == 405


def test_the_token_check_is_the_same_before_and_inside_flask(store):
    """Ingest (answered before Flask) and the other /v1/ paths (Flask) refuse alike."""
    client = create_app(store, token="s3cret").test_client()
    ingest = post(client, b"", PB)
    other = client.post("/v1/metrics", data=b"", headers={"Content-Type": PB})
    for resp in (ingest, other):
        assert resp.status_code == 401 and resp.headers["WWW-Authenticate"] == 'Bearer realm="gwtrace"'
        assert resp.headers["Referrer-Policy"] == "no-referrer"
    assert ingest.data == other.data
