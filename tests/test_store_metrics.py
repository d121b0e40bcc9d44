"""Resource metrics in the store (``gwtrace.store.metrics``): kept per subject, read by trace, job and glidein,
bounded against a hostile node, purged by retention, received at ``/v1/metrics`` and from ``kind=metrics`` blocks."""

from __future__ import annotations

import gzip
import io
import json
import math
from pathlib import Path

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceResponse

from gwtrace.store import TraceStore, limits
from gwtrace.store import metrics as store_metrics
from metrics_gen import MB, T0, add_metric, flat_job, leaking_job, request, resource, series_of, subject

TRACE = "0af7651916cd43dd8448eb211c80319c"
SPAN = "b7ad6b7169203331"


def _store(tmp_path: Path, **kw) -> TraceStore:
    return TraceStore(tmp_path / "t.db", **kw)


def test_points_are_kept_per_subject_and_read_by_trace_job_and_glidein(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        glidein = subject(resource("glidein"), load=series_of([0, 30], [1.5, 2.0]))
        kept = store.put_metrics(request([leaking_job(TRACE, span_id=SPAN, n=5), glidein]))
        assert kept == 5 + 5 + 2
        job, = store.metric_subjects(trace_id=TRACE)
        assert (job["kind"], job["job_id"], job["span_id"], job["owner"], job["site"]) == \
            ("job", "200.0", SPAN, "alice", "SiteA")
        assert job["request_memory_mb"] == 2000 and job["request_cpus"] == 1
        assert [s["id"] for s in store.metric_subjects(job_id="200.0")] == [job["id"]]
        assert {s["kind"] for s in store.metric_subjects(glidein="g-1")} == {"glidein", "job"}
        series = {(s["name"], json.dumps(s["attributes"])): s["points"] for s in store.metric_series(job["id"])}
        rss = series[("process.memory.usage", "{}")]
        assert [v for _, v in rss] == [500 * MB, 560 * MB, 620 * MB, 680 * MB, 740 * MB]
        assert series[("process.cpu.time", '{"cpu.mode": "user"}')][1] == [T0 + 30 * 10**9, pytest.approx(28.5)]
        peak, = store.metric_peaks(ids=[job["id"]])
        assert peak["peak_bytes"] == 740 * MB and peak["cpu_s"] == pytest.approx(0.95 * 120)


def test_a_retried_request_adds_nothing_and_a_kept_sample_is_never_replaced(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        req = request([flat_job(TRACE, n=4)])
        store.put_metrics(req)
        store.put_metrics(req)
        store.put_metrics(request([flat_job(TRACE, n=4, mb=99_999)]))        # the same times, other values
        job, = store.metric_subjects(trace_id=TRACE)
        assert sum(len(s["points"]) for s in store.metric_series(job["id"])) == 8
        assert store.metric_peaks(ids=[job["id"]])[0]["peak_mb"] == pytest.approx(803)


def test_non_finite_values_long_names_and_impossible_times_are_dropped_and_counted(tmp_path: Path) -> None:
    rm = subject(resource(trace_id=TRACE), rss=series_of([0, 30, 60], [100 * MB, math.nan, math.inf]))
    add_metric(rm.scope_metrics[0], "x" * 10_000, series_of([0], [1.0]))
    add_metric(rm.scope_metrics[0], "process.count", [(5, 3.0)])               # 1970: not a sample time
    rm.scope_metrics[0].metrics.add(name="process.histogram").histogram.data_points.add(time_unix_nano=T0)
    add_metric(rm.scope_metrics[0], "process.count", series_of([0], [1.0]),
               attributes={f"k{i}": "v" for i in range(store_metrics.MAX_POINT_ATTRIBUTES + 1)})
    with _store(tmp_path) as store:
        result = store.put_metrics_result(request([rm]))
        assert (result.kept, result.rejected) == (1, 6)
        assert "point attributes over the limits" in result.message
        assert "finite" in result.message and "name" in result.message and "time" in result.message
        job, = store.metric_subjects(trace_id=TRACE)
        assert [s["name"] for s in store.metric_series(job["id"])] == ["process.memory.usage"]


def test_a_request_with_too_many_points_is_refused_whole(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(store_metrics, "MAX_POINTS_PER_REQUEST", 100)
    with _store(tmp_path) as store:
        with pytest.raises(limits.TooLarge, match="101 metric points"):
            store.put_metrics(request([subject(resource(trace_id=TRACE),
                                               rss=series_of(range(101), [MB] * 101))]))
        assert store.metric_subjects(trace_id=TRACE) == []


def test_a_hostile_node_cannot_grow_a_subject_without_bound(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(store_metrics, "MAX_POINTS_PER_RESOURCE", 50)
    monkeypatch.setattr(store_metrics, "MAX_SERIES_PER_SUBJECT", 3)
    monkeypatch.setattr(store_metrics, "MAX_POINTS_PER_SUBJECT", 70)
    rm = subject(resource(trace_id=TRACE), rss=series_of(range(60), [MB] * 60),
                 other=[(f"m{i}", series_of([0], [1.0])) for i in range(5)])
    with _store(tmp_path) as store:
        first = store.put_metrics_result(request([rm]))
        assert first.kept == 50 and first.rejected == 15
        rm2 = subject(resource(trace_id=TRACE), rss=series_of(range(100, 140), [MB] * 40))
        second = store.put_metrics_result(request([rm2]))
        assert second.kept == 20 and "points kept for one subject" in second.message
        job, = store.metric_subjects(trace_id=TRACE)
        assert len(store.metric_series(job["id"])) <= 3


def test_long_attribute_values_and_bad_ids_are_cut_or_ignored(tmp_path: Path) -> None:
    attrs = resource(trace_id="not-hex", owner="o" * 100_000, request_memory_mb=float("nan"),
                     extra={"job.request_cpus": "lots"})
    with _store(tmp_path) as store:
        store.put_metrics(request([subject(attrs, rss=series_of([0], [MB]))]))
        job, = store.metric_subjects(job_id="123.0")
        assert job["trace_id"] is None and len(job["owner"]) == store_metrics.MAX_ATTR_CHARS
        assert job["request_memory_mb"] is None and job["request_cpus"] is None


def test_retention_purges_old_points_by_sample_time(tmp_path: Path) -> None:
    day = 86400 * 10**9
    with _store(tmp_path) as store:
        store.put_metrics(request([
            subject(resource(job_id="1.0"), rss=[(T0, MB), (T0 + 2 * day, 2 * MB)]),
            subject(resource(job_id="2.0"), rss=[(T0, MB)]),
        ]))
        assert store.purge_metrics(now_ns=T0 + 3 * day, older_than_days=2) == 2
        assert [s["job_id"] for s in store.metric_subjects()] == ["1.0"]
    with _store(tmp_path, retention_days=36500, metrics_retention_days=0.5) as store:   # purged on open
        assert store.metric_subjects() == []


def test_metrics_retention_defaults_to_the_spans(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        store.put_metrics(request([subject(resource(), rss=[(T0, MB)])]))
    with _store(tmp_path, retention_days=1) as store:
        assert store.metric_subjects() == []
    with pytest.raises(ValueError, match="metrics_retention_days"):
        _store(tmp_path, metrics_retention_days=-1)


# ------------------------------------------------------------------- /v1/metrics


@pytest.fixture
def client(tmp_path: Path):
    from gwtrace.server.app import create_app

    store = _store(tmp_path)
    app = create_app(store, token="s3cret")
    yield app.test_client(), store
    store.close()


AUTH = {"Authorization": "Bearer s3cret"}


def test_v1_metrics_takes_protobuf_and_answers_partial_success(client) -> None:
    http, store = client
    rm = subject(resource(trace_id=TRACE), rss=series_of([0, 30], [MB, math.nan]))
    r = http.post("/v1/metrics", data=request([rm]).SerializeToString(),
                  headers={**AUTH, "Content-Type": "application/x-protobuf"})
    assert r.status_code == 200 and r.content_type == "application/x-protobuf"
    resp = ExportMetricsServiceResponse.FromString(r.data)
    assert resp.partial_success.rejected_data_points == 1 and "finite" in resp.partial_success.error_message
    assert len(store.metric_subjects(trace_id=TRACE)) == 1


def test_v1_metrics_takes_json_and_gzip(client) -> None:
    from google.protobuf import json_format

    http, store = client
    body = json.dumps(json_format.MessageToDict(request([flat_job(TRACE, n=3)]))).encode()
    r = http.post("/v1/metrics", data=gzip.compress(body),
                  headers={**AUTH, "Content-Type": "application/json", "Content-Encoding": "gzip"})
    assert r.status_code == 200 and r.content_type == "application/json"
    assert r.get_json() == {}
    job, = store.metric_subjects(trace_id=TRACE)
    assert sum(len(s["points"]) for s in store.metric_series(job["id"])) == 6


@pytest.mark.parametrize("headers, body, status", [
    ({}, b"", 401),
    ({**AUTH, "Content-Type": "text/plain"}, b"x", 415),
    ({**AUTH, "Content-Type": "application/x-protobuf"}, b"\xff\xff\xff", 400),
    ({**AUTH, "Content-Type": "application/json"}, b"[1,", 400),
    ({**AUTH, "Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"},
     gzip.compress(b"\0" * (9 << 20)), 413),
])
def test_v1_metrics_refuses_as_v1_traces_does(client, headers, body, status) -> None:
    http, _ = client
    r = http.post("/v1/metrics", data=body, headers=headers)
    assert r.status_code == status


def test_v1_metrics_refuses_too_many_points_with_413(client, monkeypatch) -> None:
    monkeypatch.setattr(store_metrics, "MAX_POINTS_PER_REQUEST", 10)
    http, _ = client
    body = request([subject(resource(), rss=series_of(range(11), [MB] * 11))]).SerializeToString()
    r = http.post("/v1/metrics", data=body, headers={**AUTH, "Content-Type": "application/x-protobuf"})
    assert r.status_code == 413 and b"11 metric points" in r.data


def test_v1_metrics_answers_503_when_the_store_is_busy(client, monkeypatch) -> None:
    import sqlite3

    http, store = client

    def busy(_req):
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(store, "put_metrics_result", busy)
    r = http.post("/v1/metrics", data=request([flat_job(n=1)]).SerializeToString(),
                  headers={**AUTH, "Content-Type": "application/x-protobuf"})
    assert r.status_code == 503 and r.headers["Retry-After"]


# ------------------------------------------------------------ kind=metrics blocks


def test_gwtrace_ingest_hands_metrics_blocks_to_the_store(tmp_path: Path, monkeypatch) -> None:
    from gwtrace.factory.ingest import ingest_outputs
    from gwtrace.wire.blocks import frame

    monkeypatch.setenv("GWTRACE_HOME", str(tmp_path / "home"))
    for var in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    req = request([leaking_job(TRACE, n=4)])
    err_file = tmp_path / "job.1.0.err"
    err_file.write_text("glidein says hello\n" + frame("metrics", req.SerializeToString(), host="wn1")
                        .replace("kind=metrics", "kind=metrics points=8") + "bye\n")
    err = io.StringIO()
    assert ingest_outputs([str(err_file)], None, str(tmp_path / "ledger"), 0, err) == 0
    assert "1 metrics block(s) (8 point(s))" in err.getvalue()
    with TraceStore(tmp_path / "home" / "traces.db", create=False) as store:
        job, = store.metric_subjects(trace_id=TRACE)
        assert job["job_id"] == "200.0"
    err = io.StringIO()
    assert ingest_outputs([str(err_file)], None, str(tmp_path / "ledger"), 0, err) == 0
    assert "1 already ingested" in err.getvalue()


def test_peaks_give_memory_against_the_request_and_cpu_efficiency(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        store.put_metrics(request([flat_job(job_id="7.0", n=11, cores=3.0, request_cpus=1, mb=2500,
                                            request_memory_mb=2000)]))
        job, = store.metric_peaks()
        assert job["job_id"] == "7.0" and job["peak_mb"] == pytest.approx(2503)
        assert job["memory_ratio"] == pytest.approx(2503 / 2000)
        assert job["cores_used"] == pytest.approx(3.0) and job["cpu_efficiency"] == pytest.approx(3.0)
        assert job["cpu_s"] == pytest.approx(900) and job["rss_points"] == 11
        assert store.metric_peaks(ids=[]) == []
