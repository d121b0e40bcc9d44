"""Jaeger query API (/api and /api/v3) against stored data."""

from __future__ import annotations

import json

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from gwtrace.server import create_app
from gwtrace.server.jaeger import QueryError, parse_duration
from gwtrace.server.otlp_json import parse_request
from gwtrace.store import TraceStore
from test_store import T0, TRACE_A, TRACE_B, make_request, sid

US = 1000  # ns per µs
GLIDEIN = {"service.name": "glidein", "glidein.uuid": "u-1", "glidein.site": "SITE_A", "glidein.entry": "E1",
           "glidein.cpus": 8}


@pytest.fixture
def store(tmp_path):
    s = TraceStore(tmp_path / "traces.db")
    # Trace A: a glidein with a failing script (span attributes of every type) and a job span.
    s.ingest(make_request([
        dict(trace=TRACE_A, span=1, name="glidein_startup.sh", dur=90_000 * US, status=Status.STATUS_CODE_OK),
        dict(trace=TRACE_A, span=2, parent=1, name="check_proxy.sh", start=1_000 * US, dur=2_000 * US,
             status=Status.STATUS_CODE_ERROR, message="exit 1",
             attrs={"process.exit_code": 1, "ratio": 0.25, "retried": True, "args": ["-v", "x"]},
             events=[("exception", 2_500 * US, {"exception.message": "no proxy"})]),
        dict(trace=TRACE_A, span=3, parent=1, name="condor_startup.sh", start=5_000 * US, dur=80_000 * US),
    ], resource=GLIDEIN))
    s.ingest(make_request([dict(trace=TRACE_A, span=4, parent=3, name="user job", start=6_000 * US,
                                dur=50_000 * US, kind=Span.SPAN_KIND_SERVER, attrs={"job.id": "17.0"})],
                          resource={"service.name": "jobsvc"}))
    # Trace B: later and short, another site.
    s.ingest(make_request([dict(trace=TRACE_B, span=1, name="glidein_startup.sh", start=200_000 * US,
                                dur=3_000 * US, attrs={"process.exit_code": 0})],
                          resource=dict(GLIDEIN, **{"glidein.uuid": "u-2", "glidein.site": "SITE_B"})))
    yield s
    s.close()


@pytest.fixture
def client(store):
    return create_app(store).test_client()


def get(client, path, status=200):
    resp = client.get(path)
    assert resp.status_code == status, resp.data
    assert resp.mimetype == "application/json"
    return resp.get_json()


def trace_ids(doc):
    return [t["traceID"] for t in doc["data"]]


def test_services(client):
    doc = get(client, "/api/services")
    assert doc == {"data": ["glidein", "jobsvc"], "total": 2, "limit": 0, "offset": 0, "errors": None}


def test_operations_legacy_and_new(client):
    assert get(client, "/api/services/glidein/operations")["data"] == [
        "check_proxy.sh", "condor_startup.sh", "glidein_startup.sh"]
    assert get(client, "/api/services/nope/operations")["data"] == []
    doc = get(client, "/api/operations?service=jobsvc")
    assert doc["data"] == [{"name": "user job", "spanKind": "server"}]
    assert get(client, "/api/operations?service=jobsvc&spanKind=client")["data"] == []
    assert get(client, "/api/operations?service=jobsvc&spanKind=server")["total"] == 1
    assert "service" in get(client, "/api/operations", 400)["errors"][0]["msg"]
    assert get(client, "/api/operations?service=jobsvc&spanKind=bogus", 400)["errors"][0]["code"] == 400


def test_get_trace_in_jaeger_model(client):
    doc = get(client, f"/api/traces/{TRACE_A.hex()}")
    assert (doc["total"], doc["errors"]) == (1, None)
    [trace] = doc["data"]
    assert trace["traceID"] == TRACE_A.hex()
    spans = {s["operationName"]: s for s in trace["spans"]}
    assert len(spans) == 4
    root, script, job = spans["glidein_startup.sh"], spans["check_proxy.sh"], spans["user job"]
    assert root["references"] == []
    assert script["references"] == [{"refType": "CHILD_OF", "traceID": TRACE_A.hex(), "spanID": sid(1).hex()}]
    assert job["references"][0]["spanID"] == sid(3).hex()
    assert script["spanID"] == sid(2).hex() and script["flags"] == 1
    assert (script["startTime"], script["duration"]) == (T0 // US + 1_000, 2_000)
    tags = {t["key"]: (t["type"], t["value"]) for t in script["tags"]}
    assert tags["process.exit_code"] == ("int64", 1)
    assert tags["ratio"] == ("float64", 0.25)
    assert tags["retried"] == ("bool", True)
    assert tags["args"] == ("string", '["-v", "x"]')
    assert tags["error"] == ("bool", True)
    assert tags["otel.status_code"] == ("string", "ERROR")
    assert tags["otel.status_description"] == ("string", "exit 1")
    assert tags["span.kind"] == ("string", "internal")
    assert tags["otel.scope.name"] == ("string", "gwtrace.test")
    assert {t["key"]: t["value"] for t in job["tags"]}["span.kind"] == "server"
    assert script["logs"] == [{"timestamp": T0 // US + 2_500, "fields": [
        {"key": "event", "type": "string", "value": "exception"},
        {"key": "exception.message", "type": "string", "value": "no proxy"}]}]
    processes = trace["processes"]
    assert processes[root["processID"]]["serviceName"] == "glidein"
    assert processes[job["processID"]]["serviceName"] == "jobsvc"
    assert root["processID"] != job["processID"] and script["processID"] == root["processID"]
    ptags = {t["key"]: t["value"] for t in processes[root["processID"]]["tags"]}
    assert ptags == {"glidein.uuid": "u-1", "glidein.site": "SITE_A", "glidein.entry": "E1", "glidein.cpus": 8}


def test_one_converter_serves_the_query_api_and_the_glidein_view(client, store):
    """/api/traces and /ui/api/glidein convert stored OTLP with the same code: equal spans."""
    by_id = {}
    for trace in (TRACE_A, TRACE_B):
        for span in get(client, f"/api/traces/{trace.hex()}")["data"][0]["spans"]:
            by_id[span["traceID"], span["spanID"]] = span
    glidein = client.get("/ui/api/glidein/u-1").get_json()
    assert glidein["spans"], "the fixture has spans under glidein u-1"
    for span in glidein["spans"]:
        lane_only = {k: span.pop(k) for k in ("phase", "serviceName", "processID")}
        assert lane_only["processID"] == "p1" and lane_only["phase"]
        expected = dict(by_id[span["traceID"], span["spanID"]])
        del expected["processID"]
        assert span == expected
    assert store.trace_chunks("00" * 16) == [] and store.trace_chunks("zz") == []


def test_get_trace_errors(client):
    missing = get(client, "/api/traces/" + "ab" * 16, 404)
    assert missing["data"] is None
    assert missing["errors"] == [{"code": 404, "msg": "trace not found", "traceID": "ab" * 16}]
    assert get(client, "/api/traces/xyz", 400)["errors"][0]["code"] == 400


def test_search_requires_a_service(client):
    assert "service" in get(client, "/api/traces", 400)["errors"][0]["msg"]


def test_search_by_service_and_operation(client):
    assert trace_ids(get(client, "/api/traces?service=glidein")) == [TRACE_B.hex(), TRACE_A.hex()]
    assert trace_ids(get(client, "/api/traces?service=jobsvc")) == [TRACE_A.hex()]
    assert trace_ids(get(client, "/api/traces?service=glidein&operation=check_proxy.sh")) == [TRACE_A.hex()]
    assert trace_ids(get(client, "/api/traces?service=jobsvc&operation=check_proxy.sh")) == []
    assert trace_ids(get(client, "/api/traces?service=glidein&limit=1")) == [TRACE_B.hex()]
    # Search results are whole traces, spans of every service included.
    [trace] = get(client, "/api/traces?service=jobsvc")["data"]
    assert len(trace["spans"]) == 4


def test_search_by_tags(client):
    q = "/api/traces?service=glidein&tags=" + json.dumps({"process.exit_code": "1"})
    assert trace_ids(get(client, q)) == [TRACE_A.hex()]
    q = "/api/traces?service=glidein&tags=" + json.dumps({"process.exit_code": "0"})
    assert trace_ids(get(client, q)) == [TRACE_B.hex()]
    assert trace_ids(get(client, "/api/traces?service=glidein&tag=error:true")) == [TRACE_A.hex()]
    assert trace_ids(get(client, "/api/traces?service=glidein&tag=glidein.site:SITE_B")) == [TRACE_B.hex()]
    # All tags must hold on the same span: exit code 1 and the site of trace B never meet.
    q = "/api/traces?service=glidein&tag=glidein.site:SITE_B&tag=process.exit_code:1"
    assert trace_ids(get(client, q)) == []
    assert trace_ids(get(client, "/api/traces?service=jobsvc&tag=job.id:17.0")) == [TRACE_A.hex()]
    assert trace_ids(get(client, "/api/traces?service=glidein&tag=exception.message:no%20proxy")) == [TRACE_A.hex()]


def test_search_by_time_and_duration(client):
    base = T0 // US
    assert trace_ids(get(client, f"/api/traces?service=glidein&start={base + 100_000}")) == [TRACE_B.hex()]
    assert trace_ids(get(client, f"/api/traces?service=glidein&end={base + 100_000}")) == [TRACE_A.hex()]
    assert trace_ids(get(client, f"/api/traces?service=glidein&start={base}&end={base + 300_000}")) == [
        TRACE_B.hex(), TRACE_A.hex()]
    assert trace_ids(get(client, "/api/traces?service=glidein&minDuration=80ms")) == [TRACE_A.hex()]
    assert trace_ids(get(client, "/api/traces?service=glidein&minDuration=1.5s")) == []
    assert trace_ids(get(client, "/api/traces?service=glidein&maxDuration=2.5ms")) == [TRACE_A.hex()]
    assert trace_ids(get(client, "/api/traces?service=glidein&operation=glidein_startup.sh&maxDuration=5ms")) == [
        TRACE_B.hex()]
    assert trace_ids(get(client, "/api/traces?service=jobsvc&minDuration=60ms")) == []


@pytest.mark.parametrize("query, needle", [
    ("minDuration=10", "invalid duration"),
    ("maxDuration=fast", "invalid duration"),
    ("minDuration=2s&maxDuration=1s", "greater than"),
    ("tags=notjson", "malformed 'tags'"),
    ("tags=" + json.dumps({"a": 1}), "must be a string"),
    ("tag=novalue", "malformed 'tag'"),
    ("start=yesterday", "microseconds"),
    ("start=10&end=5", "before"),
    ("limit=-1", "limit"),
])
def test_search_parameter_errors(client, query, needle):
    doc = get(client, f"/api/traces?service=glidein&{query}", 400)
    assert doc["data"] is None and needle in doc["errors"][0]["msg"]


def test_search_by_trace_ids(client):
    doc = get(client, f"/api/traces?traceID={TRACE_B.hex()}&traceID={'cd' * 16}")
    assert trace_ids(doc) == [TRACE_B.hex()]
    assert doc["errors"] == [{"code": 404, "msg": "trace not found", "traceID": "cd" * 16}]


def test_v3_trace_is_otlp_json_that_round_trips(client, store):
    doc = get(client, f"/api/v3/traces/{TRACE_A.hex()}")
    resource_spans = doc["result"]["resourceSpans"]
    assert {rs["resource"]["attributes"][0]["value"]["stringValue"] for rs in resource_spans} == {"glidein", "jobsvc"}
    spans = [s for rs in resource_spans for ss in rs["scopeSpans"] for s in ss["spans"]]
    script = next(s for s in spans if s["name"] == "check_proxy.sh")
    assert script["traceId"] == TRACE_A.hex() and script["spanId"] == sid(2).hex()
    assert script["parentSpanId"] == sid(1).hex()
    assert script["kind"] == 1 and script["status"] == {"message": "exit 1", "code": 2}
    assert script["startTimeUnixNano"] == str(T0 + 1_000 * US)
    # What /api/v3 returns is OTLP/JSON our own receiver (and any other) reads back identically.
    request, rejected, _ = parse_request(json.dumps(doc["result"]).encode())
    assert rejected == 0
    stored = {(s["span_id"], s["name"], s["start_ns"], s["end_ns"]) for s in store.get_trace(TRACE_A)}
    again = {(s.span_id.hex(), s.name, s.start_time_unix_nano, s.end_time_unix_nano)
             for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans}
    assert again == stored


def test_v3_merges_chunks_of_one_scope(client, store):
    store.ingest(make_request([dict(trace=TRACE_B, span=9, parent=1, name="late")],
                              resource=dict(GLIDEIN, **{"glidein.uuid": "u-2", "glidein.site": "SITE_B"})))
    doc = get(client, f"/api/v3/traces/{TRACE_B.hex()}")
    [rs] = doc["result"]["resourceSpans"]
    [ss] = rs["scopeSpans"]
    assert sorted(s["name"] for s in ss["spans"]) == ["glidein_startup.sh", "late"]


def test_v3_errors_and_listings(client):
    assert get(client, "/api/v3/traces/" + "ef" * 16, 404) == {"error": {
        "grpcCode": 5, "httpCode": 404, "message": "trace not found", "httpStatus": "Not Found"}}
    assert get(client, "/api/v3/traces/nothex", 400)["error"]["grpcCode"] == 3
    assert get(client, "/api/v3/services") == {"services": ["glidein", "jobsvc"]}
    assert get(client, "/api/v3/operations?service=jobsvc") == {"operations": [{"name": "user job", "spanKind": "server"}]}
    assert get(client, "/api/v3/operations?service=jobsvc&span_kind=internal") == {"operations": []}
    assert get(client, "/api/v3/operations", 400)["error"]["httpCode"] == 400


def test_unknown_path_is_a_json_404(client):
    assert get(client, "/api/nothing", 404)["errors"][0]["code"] == 404


@pytest.mark.parametrize("text, ns", [
    ("0", 0), ("10ms", 10_000_000), ("1.5s", 1_500_000_000), ("1m30s", 90_000_000_000),
    ("500us", 500_000), ("500µs", 500_000), ("2h", 7_200_000_000_000), ("250ns", 250), (".5s", 500_000_000),
])
def test_parse_duration(text, ns):
    assert parse_duration(text) == ns


@pytest.mark.parametrize("text", ["10", "abc", "1.5", "s", "", "1d"])
def test_parse_duration_rejects(text):
    with pytest.raises(QueryError):
        parse_duration(text)


def test_empty_store(tmp_path):
    with TraceStore(tmp_path / "empty.db") as s:
        client = create_app(s).test_client()
        assert get(client, "/api/services")["data"] == []
        assert get(client, "/api/traces?service=glidein")["data"] == []
        assert get(client, "/api/v3/services") == {"services": []}
