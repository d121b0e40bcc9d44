"""The SQLite trace store: ingest, idempotency, rejection, queries, retention, sharing."""

from __future__ import annotations

import os
import random
import sqlite3
import stat
import subprocess
import threading
import time
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from conftest import GWTRACE, clean_env
from synthetic import set_attr
from gwtrace.store import SCHEMA_VERSION, StoreUnreadable, TraceStore, default_store_path

T0 = 1_700_000_000_000_000_000
TRACE_A = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")
TRACE_B = bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736")


def sid(n: int) -> bytes:
    return n.to_bytes(8, "big")


def make_request(spans, resource=None, scope="gwtrace.test"):
    """One ResourceSpans/ScopeSpans holding `spans` (list of dicts)."""
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    resource = resource if resource is not None else {"service.name": "glidein", "glidein.uuid": "u-1",
                                                      "glidein.site": "SITE_A", "glidein.entry": "ENTRY_1"}
    for k, v in resource.items():
        set_attr(rs.resource.attributes, k, v)
    ss = rs.scope_spans.add()
    ss.scope.name = scope
    ss.scope.version = "1.0"
    for d in spans:
        add_span(ss, **d)
    return req


def add_span(ss, trace=TRACE_A, span=1, parent=0, name="op", start=0, dur=1000, kind=Span.SPAN_KIND_INTERNAL,
             status=Status.STATUS_CODE_UNSET, message="", attrs=None, events=()):
    s = ss.spans.add()
    s.trace_id = trace
    s.span_id = sid(span) if isinstance(span, int) else span
    if parent:
        s.parent_span_id = sid(parent) if isinstance(parent, int) else parent
    s.name = name
    s.kind = kind
    s.start_time_unix_nano = T0 + start
    s.end_time_unix_nano = T0 + start + dur
    s.status.code = status
    s.status.message = message
    for k, v in (attrs or {}).items():
        set_attr(s.attributes, k, v)
    for ename, etime, eattrs in events:
        e = s.events.add()
        e.name = ename
        e.time_unix_nano = T0 + etime
        for k, v in eattrs.items():
            set_attr(e.attributes, k, v)
    return s


@pytest.fixture
def store(tmp_path):
    s = TraceStore(tmp_path / "db" / "traces.db")
    yield s
    s.close()


def test_default_path_follows_gwtrace_home(monkeypatch, tmp_path):
    monkeypatch.setenv("GWTRACE_HOME", str(tmp_path / "home"))
    assert default_store_path() == tmp_path / "home" / "traces.db"
    monkeypatch.delenv("GWTRACE_HOME")
    assert default_store_path().parts[-4:] == (".local", "share", "gwtrace", "traces.db")


def test_creates_private_dir_and_file_in_wal_mode(tmp_path, monkeypatch):
    monkeypatch.setenv("GWTRACE_HOME", str(tmp_path / "gh"))
    with TraceStore() as s:
        assert s.path == tmp_path / "gh" / "traces.db"
        assert stat.S_IMODE(os.stat(tmp_path / "gh").st_mode) & 0o077 == 0
        assert stat.S_IMODE(os.stat(s.path).st_mode) & 0o077 == 0
    conn = sqlite3.connect(tmp_path / "gh" / "traces.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"chunks_trace", "traces_start", "traces_status", "resources_service", "resources_glidein"} <= indexes
    conn.close()


def test_round_trip_of_every_field(store):
    req = make_request([
        dict(span=1, name="glidein", dur=10_000, status=Status.STATUS_CODE_OK, attrs={"glidein.rc": 0}),
        dict(span=2, parent=1, name="validate check_proxy.sh", start=100, dur=500, kind=Span.SPAN_KIND_CLIENT,
             status=Status.STATUS_CODE_ERROR, message="exit 1",
             attrs={"script.path": "/x/check_proxy.sh", "ok": False, "ratio": 0.5, "list": ["a", "b"]},
             events=[("exception", 200, {"exception.message": "no proxy"})]),
    ])
    assert store.ingest(req) == (2, 0, "")
    spans = store.get_trace(TRACE_A.hex())
    assert [s["name"] for s in spans] == ["glidein", "validate check_proxy.sh"]
    root, child = spans
    assert root["parent_span_id"] == "" and root["status_code"] == 1
    assert root["trace_id"] == TRACE_A.hex() and root["span_id"] == sid(1).hex()
    assert child["parent_span_id"] == sid(1).hex()
    assert child["kind"] == Span.SPAN_KIND_CLIENT
    assert (child["start_ns"], child["end_ns"]) == (T0 + 100, T0 + 600)
    assert (child["status_code"], child["status_message"]) == (2, "exit 1")
    assert child["attributes"] == {"script.path": "/x/check_proxy.sh", "ok": False, "ratio": 0.5, "list": ["a", "b"]}
    assert child["events"] == [{"name": "exception", "time_ns": T0 + 200, "attributes": {"exception.message": "no proxy"}}]
    assert child["resource"]["glidein.site"] == "SITE_A"
    assert (child["service"], child["scope"]) == ("glidein", "gwtrace.test")
    assert store.get_trace(TRACE_A.hex().upper()) == spans
    assert store.span_count() == 2


def test_resending_spans_replaces_never_duplicates(store):
    first = make_request([dict(span=1, name="glidein", dur=100), dict(span=2, parent=1, name="old", dur=10)])
    store.ingest(first)
    # A retried batch: span 2 again (now finished with another name/status) plus a new span 3.
    again = make_request([dict(span=2, parent=1, name="new", dur=20, status=Status.STATUS_CODE_ERROR),
                          dict(span=3, parent=1, name="third")])
    assert store.ingest(again) == (2, 0, "")
    assert store.ingest(again) == (2, 0, "")
    spans = store.get_trace(TRACE_A)
    assert sorted(s["span_id"] for s in spans) == [sid(1).hex(), sid(2).hex(), sid(3).hex()]
    assert {s["name"] for s in spans} == {"glidein", "new", "third"}
    assert store.span_count() == 3
    [summary] = store.find_traces()
    assert (summary["span_count"], summary["error_count"], summary["status_code"]) == (3, 1, 2)
    assert store.find_traces(operation="old") == []
    assert len(store.find_traces(operation="new")) == 1


BACKFILLED = {"gwtrace.source": "factory-logs"}


@pytest.mark.parametrize("live_first", [True, False], ids=["live-first", "backfill-first"])
def test_a_live_span_replaces_a_backfilled_one_and_never_the_reverse(tmp_path, live_first):
    """The factory's backfill and the node's live spans share their ids (factory.to_trace): whichever comes
    first, the live copy is kept, the backfilled one fills what the live side lacks, one root."""
    backfill = make_request([dict(span=1, name="glidein", dur=10_000, attrs=BACKFILLED),
                             dict(span=2, parent=1, name="main/cat_consts.sh", dur=1000, attrs=BACKFILLED),
                             dict(span=4, parent=1, name="main/validate.sh", dur=1000, attrs=BACKFILLED,
                                  status=Status.STATUS_CODE_ERROR)])
    live = make_request([dict(span=1, name="glidein", start=123, dur=9_000, status=Status.STATUS_CODE_OK),
                         dict(span=3, parent=1, name="main/condor_startup.sh", start=5000, dur=3000),
                         dict(span=4, parent=1, name="main/validate.sh", start=2000, dur=250)])
    with TraceStore(tmp_path / "traces.db") as store:
        for request in ((live, backfill) if live_first else (backfill, live)):
            store.ingest(request)
        spans = {s["span_id"]: s for s in store.get_trace(TRACE_A)}
        [summary] = store.find_traces()
    assert sorted(spans) == [sid(n).hex() for n in (1, 2, 3, 4)]
    assert [s["name"] for s in spans.values() if not s["parent_span_id"]] == ["glidein"]
    for live_id in (1, 3, 4):
        assert "gwtrace.source" not in spans[sid(live_id).hex()]["attributes"], live_id
    assert spans[sid(1).hex()]["start_ns"] == T0 + 123 and spans[sid(4).hex()]["status_code"] == 0
    assert spans[sid(2).hex()]["attributes"]["gwtrace.source"] == "factory-logs"
    assert (summary["span_count"], summary["error_count"]) == (4, 0)


def test_an_identical_resend_writes_nothing_and_new_spans_beside_it_are_kept(store):
    first = make_request([dict(span=1, name="glidein", dur=100), dict(span=2, parent=1, name="a", dur=10)])
    store.ingest(first)
    chunks = store.reader().execute("SELECT id, span_ids, body FROM chunks ORDER BY id").fetchall()
    store.ingest(first)
    assert store.reader().execute("SELECT id, span_ids, body FROM chunks ORDER BY id").fetchall() == chunks
    store.ingest(make_request([dict(span=2, parent=1, name="a", dur=10), dict(span=3, parent=1, name="b")]))
    rows = store.reader().execute("SELECT id, span_ids, body FROM chunks ORDER BY id").fetchall()
    assert rows[:len(chunks)] == chunks and [bytes(r[1]) for r in rows[len(chunks):]] == [sid(3)]
    assert store.span_count() == 3 and store.find_traces()[0]["span_count"] == 3


def test_duplicate_inside_one_request_keeps_the_last(store):
    req = make_request([dict(span=1, name="a"), dict(span=1, name="b")])
    assert store.ingest(req) == (1, 0, "")
    assert [s["name"] for s in store.get_trace(TRACE_A)] == ["b"]


def test_bad_spans_are_rejected_and_counted_the_rest_kept(store):
    req = make_request([
        dict(span=1, name="good"),
        dict(trace=bytes(16), span=2, name="zero trace"),
        dict(trace=b"short", span=3, name="short trace"),
        dict(span=bytes(8), name="zero span"),
        dict(span=b"\x01\x02", name="short span"),
        dict(span=4, parent=b"\x01", name="bad parent"),
        dict(span=5, name="backwards", dur=-5),
        dict(trace=TRACE_B, span=6, name="good too"),
    ])
    accepted, rejected, message = store.ingest(req)
    assert (accepted, rejected) == (2, 6)
    assert "spans[1]: trace_id must be 16 bytes" in message
    assert "spans[3]: span_id must be 8 bytes" in message
    assert "1 more" in message
    assert [s["name"] for s in store.get_trace(TRACE_A)] == ["good"]
    assert [s["name"] for s in store.get_trace(TRACE_B)] == ["good too"]


def test_request_with_only_bad_spans_stores_nothing(store):
    assert store.ingest(make_request([dict(span=bytes(8))]))[:2] == (0, 1)
    assert store.ingest(ExportTraceServiceRequest()) == (0, 0, "")
    assert store.span_count() == 0 and store.services() == []


def test_mixed_traces_in_one_scope_are_split(store):
    req = make_request([dict(trace=TRACE_A, span=1, name="a1"), dict(trace=TRACE_B, span=1, name="b1"),
                        dict(trace=TRACE_A, span=2, parent=1, name="a2")])
    assert store.ingest(req) == (3, 0, "")
    assert [s["name"] for s in store.get_trace(TRACE_A)] == ["a1", "a2"]
    assert [s["name"] for s in store.get_trace(TRACE_B)] == ["b1"]
    assert store.trace_count() == 2


def test_unknown_or_malformed_trace_id_reads_empty(store):
    store.ingest(make_request([dict(span=1)]))
    assert store.get_trace("ffffffffffffffffffffffffffffffff") == []
    assert store.get_trace("not hex") == []
    assert store.get_trace("") == []


def test_last_trace_id_is_the_latest_root(store):
    store.ingest(make_request([dict(trace=TRACE_A, span=1, start=5_000)]))
    store.ingest(make_request([dict(trace=TRACE_B, span=1, start=1_000)], resource={"service.name": "job"}))
    assert store.last_trace_id() == TRACE_A.hex()
    assert store.last_trace_id(service="job") == TRACE_B.hex()
    assert store.last_trace_id(service="nope") is None
    # A late child of B does not move B's start.
    store.ingest(make_request([dict(trace=TRACE_B, span=2, parent=1, start=9_000)], resource={"service.name": "job"}))
    assert store.last_trace_id() == TRACE_A.hex()


def test_root_name_arrives_after_children(store):
    store.ingest(make_request([dict(span=2, parent=1, name="child", start=10)]))
    [summary] = store.find_traces()
    assert summary["root_name"] == "child"
    store.ingest(make_request([dict(span=1, name="glidein", start=0, dur=100)]))
    [summary] = store.find_traces()
    assert (summary["root_name"], summary["root_service"], summary["span_count"]) == ("glidein", "glidein", 2)


def test_an_operation_with_a_window_matches_on_that_operations_span(store):
    """As in Jaeger: with an operation, the window is matched on a span of that operation, so a
    long trace whose root started before the window is not found by the window's later spans."""
    store.ingest(make_request([
        dict(trace=TRACE_A, span=1, name="glidein", start=0, dur=100_000),
        dict(trace=TRACE_A, span=2, parent=1, name="condor", start=60_000, dur=10_000),
    ]))
    store.ingest(make_request([dict(trace=TRACE_B, span=1, name="glidein", start=70_000, dur=10_000)],
                              resource={"service.name": "glidein", "glidein.uuid": "u-2"}))
    ids = lambda found: [t["trace_id"] for t in found]  # noqa: E731
    late = dict(service="glidein", start_ns=T0 + 50_000, end_ns=T0 + 90_000)
    assert ids(store.find_traces(**late)) == [TRACE_B.hex(), TRACE_A.hex()]       # spans reach into it
    assert ids(store.find_traces(operation="glidein", **late)) == [TRACE_B.hex()]   # roots starting in it
    assert ids(store.find_traces(operation="condor", **late)) == [TRACE_A.hex()]    # a child's start (decoded)
    assert ids(store.find_traces(operation="glidein", service="glidein", start_ns=T0, end_ns=T0 + 10)) == \
        [TRACE_A.hex()]


def test_services_operations_and_search(store):
    store.ingest(make_request([
        dict(trace=TRACE_A, span=1, name="glidein", dur=50_000),
        dict(trace=TRACE_A, span=2, parent=1, name="condor", start=100, dur=40_000, attrs={"rc": 0}),
    ]))
    store.ingest(make_request(
        [dict(trace=TRACE_B, span=1, name="glidein", start=100_000, dur=2_000, status=Status.STATUS_CODE_ERROR,
              attrs={"rc": 1})],
        resource={"service.name": "glidein", "glidein.uuid": "u-2", "glidein.site": "SITE_B"}))
    store.ingest(make_request([dict(trace=TRACE_B, span=9, parent=1, name="user job", start=100_500,
                                    kind=Span.SPAN_KIND_SERVER)],
                              resource={"service.name": "user-job"}))
    assert store.services() == ["glidein", "user-job"]
    assert store.operations("glidein") == [("condor", 1), ("glidein", 1)]
    assert store.operations("user-job", kind=Span.SPAN_KIND_SERVER) == [("user job", 2)]
    assert store.operations("user-job", kind=Span.SPAN_KIND_CLIENT) == []

    ids = lambda found: [t["trace_id"] for t in found]  # noqa: E731
    assert ids(store.find_traces(service="glidein")) == [TRACE_B.hex(), TRACE_A.hex()]  # newest first
    assert ids(store.find_traces(service="glidein", limit=1)) == [TRACE_B.hex()]
    assert ids(store.find_traces(service="user-job")) == [TRACE_B.hex()]
    assert ids(store.find_traces(service="glidein", operation="condor")) == [TRACE_A.hex()]
    assert ids(store.find_traces(service="user-job", operation="condor")) == []
    assert ids(store.find_traces(resource_attrs={"glidein.site": "SITE_B"})) == [TRACE_B.hex()]
    assert ids(store.find_traces(status=2)) == [TRACE_B.hex()]
    assert ids(store.find_traces(min_trace_duration_ns=10_000)) == [TRACE_A.hex()]
    assert ids(store.find_traces(start_ns=T0 + 50_000)) == [TRACE_B.hex()]
    assert ids(store.find_traces(end_ns=T0 + 50_000)) == [TRACE_A.hex()]
    # Jaeger span-level semantics: the tag and the duration must hold on one span of the service.
    assert ids(store.find_traces(service="glidein", tags={"rc": "0"})) == [TRACE_A.hex()]
    assert ids(store.find_traces(service="glidein", tags={"rc": "1"})) == [TRACE_B.hex()]
    assert ids(store.find_traces(tags={"glidein.site": "SITE_A"})) == [TRACE_A.hex()]  # resource tag
    assert ids(store.find_traces(tags={"error": "true"})) == [TRACE_B.hex()]
    assert ids(store.find_traces(service="glidein", operation="condor", min_duration_ns=45_000)) == []
    assert ids(store.find_traces(service="glidein", min_duration_ns=45_000)) == [TRACE_A.hex()]
    assert ids(store.find_traces(service="glidein", max_duration_ns=3_000)) == [TRACE_B.hex()]
    [summary] = store.find_traces(service="user-job")
    assert summary["services"] == ["glidein", "user-job"]
    assert store.resource_attribute_values("glidein.site") == ["SITE_A", "SITE_B"]


def test_glidein_spans_and_list(store):
    store.ingest(make_request([dict(trace=TRACE_A, span=1, name="glidein"), dict(trace=TRACE_A, span=2, parent=1)]))
    store.ingest(make_request([dict(trace=TRACE_B, span=3, name="job", start=50)],
                              resource={"service.name": "glidein", "service.instance.id": "u-1"}))
    store.ingest(make_request([dict(trace=TRACE_B, span=4, name="other")],
                              resource={"service.name": "glidein", "glidein.uuid": "u-9"}))
    spans = store.glidein_spans("u-1")
    assert [s["name"] for s in spans] == ["glidein", "op", "job"]
    assert store.glidein_spans("missing") == []
    assert {g["uuid"] for g in store.glideins()} == {"u-1", "u-9"}


def test_retention_purges_old_traces_only(tmp_path):
    path = tmp_path / "traces.db"
    now = time.time_ns()
    recent = make_request([dict(trace=TRACE_B, span=1)], resource={"service.name": "fresh"})
    recent.resource_spans[0].scope_spans[0].spans[0].start_time_unix_nano = now - 10**9
    recent.resource_spans[0].scope_spans[0].spans[0].end_time_unix_nano = now
    with TraceStore(path) as s:
        s.ingest(make_request([dict(trace=TRACE_A, span=1)]))  # ended in 2023
        s.ingest(recent)
        assert s.purge() == 0  # no retention configured: keep everything
        assert s.purge(now_ns=now, older_than_days=1) == 1
        assert s.get_trace(TRACE_A) == [] and len(s.get_trace(TRACE_B)) == 1
        assert s.services() == ["fresh"]
        # The purged trace can come back (its ids are not remembered as stored).
        s.ingest(make_request([dict(trace=TRACE_A, span=1)]))
        assert len(s.get_trace(TRACE_A)) == 1
    with TraceStore(path, retention_days=30) as s:  # purges on open
        assert s.get_trace(TRACE_A) == [] and len(s.get_trace(TRACE_B)) == 1
    with pytest.raises(ValueError):
        TraceStore(path, retention_days=0)


def test_two_stores_share_one_file(tmp_path):
    path = tmp_path / "shared.db"
    a, b = TraceStore(path), TraceStore(path)
    try:
        a.ingest(make_request([dict(span=1, name="from a")]))
        b.ingest(make_request([dict(span=1, name="from b"), dict(span=2, name="b2")]))
        # a's in-memory id cache must notice b's chunk: the re-send replaces, not duplicates.
        a.ingest(make_request([dict(span=2, name="a again")]))
        names = sorted(s["name"] for s in a.get_trace(TRACE_A))
        assert names == ["a again", "from b"]
        assert a.span_count() == b.span_count() == 2
    finally:
        a.close()
        b.close()


def test_concurrent_threads(store):
    errors = []

    def worker(n):
        try:
            for i in range(20):
                trace = (n * 1000 + i + 1).to_bytes(16, "big")
                store.ingest(make_request([dict(trace=trace, span=1), dict(trace=trace, span=2, parent=1)]))
                assert len(store.get_trace(trace)) == 2
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.span_count() == 160 and store.trace_count() == 80


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "t.db"
    TraceStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(RuntimeError, match="newer than this gwtrace"):
        TraceStore(path)


def test_purge_in_one_process_resets_the_caches_of_another(tmp_path):
    """Store B must not trust what it cached about a trace that store A purged meanwhile."""
    path = tmp_path / "shared.db"
    a, b = TraceStore(path), TraceStore(path)
    try:
        b.ingest(make_request([dict(span=1, name="glidein"), dict(span=2, parent=1, name="condor")]))
        assert a.purge(now_ns=T0 + 10**15, older_than_days=1) == 1
        b.ingest(make_request([dict(span=1, name="glidein"), dict(span=2, parent=1, name="condor")]))
        assert b.span_count() == 2
        assert b.operations("glidein") == [("condor", 1), ("glidein", 1)]
        assert [t["trace_id"] for t in b.find_traces(service="glidein", operation="condor")] == [TRACE_A.hex()]
    finally:
        a.close()
        b.close()


def test_group_commit_under_concurrency_keeps_every_request(store):
    """Requests that share a transaction are each committed, counted and readable."""
    barrier = threading.Barrier(8)
    results = []

    def worker(n):
        trace = (n + 1).to_bytes(16, "big")
        req = make_request([dict(trace=trace, span=i + 1, parent=1 if i else 0) for i in range(50)]
                           + [dict(trace=trace, span=bytes(8))])
        barrier.wait()
        results.append(store.ingest(req))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r[:2] for r in results) == [(50, 1)] * 8
    assert store.span_count() == 400 and store.trace_count() == 8


def test_version_1_store_is_upgraded(tmp_path):
    path = tmp_path / "v1.db"
    TraceStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("CREATE INDEX traces_end ON traces (end_ns)")
    conn.execute("DROP TABLE meta")
    conn.execute("PRAGMA user_version = 1")
    conn.close()
    with TraceStore(path) as s:
        assert s.ingest(make_request([dict(span=1)]))[:2] == (1, 0)
        assert s.purge(now_ns=T0 + 10**15, older_than_days=1) == 1
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'traces_end'").fetchone()[0] == 0
    conn.close()


def test_version_2_store_gets_trace_ops_keyed_by_trace(tmp_path):
    """A store from before schema 3 (trace_ops keyed by operation) is migrated in place, rows kept."""
    path = tmp_path / "v2.db"
    with TraceStore(path) as s:
        s.ingest(make_request([dict(span=1, name="glidein"), dict(span=2, parent=1, name="job", start=10)]))
        s.ingest(make_request([dict(trace=TRACE_B, span=3, name="other")], resource={"service.name": "svc"}))
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT trace_id, service, name, kind FROM trace_ops").fetchall()
    conn.executescript("""
        DROP TABLE trace_ops;
        CREATE TABLE trace_ops (service TEXT NOT NULL, name TEXT NOT NULL, kind INTEGER NOT NULL,
                                trace_id BLOB NOT NULL, PRIMARY KEY (service, name, kind, trace_id)) WITHOUT ROWID;
        CREATE INDEX trace_ops_trace ON trace_ops (trace_id);
        PRAGMA user_version = 2;
    """)
    conn.executemany("INSERT INTO trace_ops VALUES (?, ?, ?, ?)", [(r[1], r[2], r[3], r[0]) for r in rows])
    conn.commit()
    conn.close()
    with TraceStore(path) as s:
        assert [t["trace_id"] for t in s.find_traces(operation="job")] == [TRACE_A.hex()]
        assert [t["trace_id"] for t in s.find_traces(service="svc", operation="other")] == [TRACE_B.hex()]
        assert s.find_traces(service="svc", operation="job") == []
        assert s.purge(now_ns=T0 + 10**15, older_than_days=1) == 2
        assert s.services() == []
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert "trace_ops_v2" not in names and "trace_ops_trace" not in names
    assert "PRIMARY KEY (trace_id" in conn.execute(
        "SELECT sql FROM sqlite_master WHERE name = 'trace_ops'").fetchone()[0]
    conn.close()


def test_checkpoints_run_in_a_background_thread(tmp_path, monkeypatch):
    """Past CHECKPOINT_BYTES of chunks, a thread copies the WAL into the file; ingest never waits for it."""
    import gwtrace.store.connections as connections

    monkeypatch.setattr(connections, "CHECKPOINT_BYTES", 1)
    path = tmp_path / "traces.db"
    s = TraceStore(path)
    try:
        before = path.read_bytes()         # a new store is made whole (its schema in the file, not the WAL)
        s.ingest(make_request([dict(span=i, start=i) for i in range(1, 200)]))
        thread = s._connections.checkpoints.thread
        assert thread is not None and thread.name == "gwtrace-checkpoint"
        deadline = time.time() + 10
        while path.read_bytes() == before and time.time() < deadline:
            time.sleep(0.01)
        assert path.read_bytes() != before  # the chunk's pages reached the database file
        assert s.span_count() == 199
    finally:
        s.close()
    assert not thread.is_alive()
    with TraceStore(path) as again:
        assert again.span_count() == 199


def test_readers_start_no_checkpoint_thread(store):
    store.ingest(make_request([dict(span=1)]))
    assert store.get_trace(TRACE_A) and store._connections.checkpoints.thread is None


# ---------------------------------------------------------------- damaged or foreign files


def damaged_store(path: Path) -> Path:
    """A real store whose pages after the first are overwritten with noise (as a failing disk leaves it).

    The header and schema page survive, so the file opens; every read of a
    table's pages fails with "database disk image is malformed".
    """
    with TraceStore(path) as s:
        for i in range(1, 400):
            s.ingest(make_request([dict(trace=TRACE_A, span=i, start=i, name="x" * 200)]))
    size = path.stat().st_size
    page = 16384
    assert size > 4 * page
    with open(path, "r+b") as f:
        f.seek(page)
        f.write(random.Random(7).randbytes(size - page))
    return path


def test_a_damaged_store_fails_with_a_database_error(tmp_path):
    with TraceStore(damaged_store(tmp_path / "traces.db")) as s:
        with pytest.raises(sqlite3.DatabaseError, match="malformed"):
            s.ingest(make_request([dict(span=9999)]))
        with pytest.raises(sqlite3.DatabaseError, match="malformed"):
            s.find_traces()


def test_opening_an_existing_store_creates_nothing(tmp_path):
    missing = tmp_path / "no" / "such" / "traces.db"
    with pytest.raises(StoreUnreadable, match="no store at .* yet: `gwtrace ingest` or `gwtrace serve` makes it"):
        TraceStore(missing, create=False)
    with pytest.raises(StoreUnreadable, match="is not a file: give the path of a gwtrace store"):
        TraceStore(tmp_path, create=False)
    assert not (tmp_path / "no").exists()
    empty = tmp_path / "empty.db"
    empty.touch()
    with pytest.raises(StoreUnreadable, match="empty, not a gwtrace store"):
        TraceStore(empty, create=False)
    assert empty.stat().st_size == 0
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    before = other.read_bytes()
    with pytest.raises(StoreUnreadable, match="not a gwtrace store"):
        TraceStore(other, create=False)
    assert other.read_bytes() == before  # neither converted to WAL nor given our tables
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db", "other.db"]


def test_opening_an_existing_store_reads_it(tmp_path):
    path = tmp_path / "traces.db"
    with TraceStore(path) as s:
        s.ingest(make_request([dict(span=1)]))
    with TraceStore(path, create=False) as s:
        assert s.span_count() == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["traces.db"]


def run_show(*args: str, home: Path) -> subprocess.CompletedProcess:
    return subprocess.run([GWTRACE, "show", *args], env=clean_env(GWTRACE_HOME=str(home)),
                          capture_output=True, text=True, timeout=60)


def test_show_on_unreadable_stores_says_so_in_one_line(tmp_path):
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not sqlite at all " * 100)
    cases = [
        (damaged_store(tmp_path / "damaged.db"), "store unreadable: {}: database disk image is malformed"),
        (garbage, "store unreadable: {} is not a gwtrace store (file is not a database): give the traces.db "
                  "that `gwtrace serve` or `gwtrace ingest` writes"),
        (tmp_path, "store unreadable: {} is not a file: give the path of a gwtrace store (traces.db)"),
    ]
    for path, message in cases:
        out = run_show("--db", str(path), home=tmp_path / "home")
        assert (out.returncode, out.stdout) == (1, ""), out
        assert out.stderr == f"gwtrace: {message.format(path)}\n"
    assert not (tmp_path / "home").exists()


def test_show_db_never_creates_files_or_directories(tmp_path):
    for db in (tmp_path / "typo" / "traces.db", tmp_path / "traces.db"):
        out = run_show("--db", str(db), home=tmp_path / "home")
        assert out.returncode == 1 and out.stderr == (f"gwtrace: no traces in {db} (no store there: the sidecar's "
                                                      "embedded exporter, `gwtrace ingest` or `gwtrace serve` makes it)\n")
    out = run_show("--last", home=tmp_path / "home")
    assert out.returncode == 1 and "no store there" in out.stderr
    assert list(tmp_path.iterdir()) == []


def test_show_db_reads_a_store_and_leaves_no_files_behind(tmp_path):
    db = tmp_path / "traces.db"
    with TraceStore(db) as s:
        s.ingest(make_request([dict(span=1, name="only")]))
    out = run_show("--db", str(db), home=tmp_path / "home")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[1].startswith("only  ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["traces.db"]


def test_search_window_matches_on_span_start_times(store):
    """As docs/server.md says: trace-level, the span starts need only reach into the window."""
    store.ingest(make_request([dict(span=1, start=0, dur=100), dict(span=2, start=100, dur=10)]))
    around = dict(start_ns=T0 + 40, end_ns=T0 + 60)  # spans start before and after, none inside
    assert [t["trace_id"] for t in store.find_traces(**around)] == [TRACE_A.hex()]
    assert store.find_traces(start_ns=T0 + 101) == [] and store.find_traces(end_ns=T0 - 1) == []
    # With a span-level condition, the matching span itself must start inside the window.
    assert store.find_traces(min_duration_ns=1, **around) == []
    assert len(store.find_traces(min_duration_ns=1, start_ns=T0 + 90, end_ns=T0 + 110)) == 1


def test_a_new_store_appears_complete_never_empty(tmp_path, monkeypatch):
    """A sidecar says "ready" before it makes its embedded store; a reader looking then (gwtrace job, a page, a
    test polling it) must find no store or a whole one, never an empty file ("not a gwtrace store")."""
    import threading

    import gwtrace.store.trace_store as store_module     # where TraceStore creates a file

    seen = []
    real_migrate = store_module.migrate

    def watching(conn, path):
        seen.append(os.path.exists(tmp_path / "first.db"))      # the final path while the schema is written
        return real_migrate(conn, path)

    monkeypatch.setattr(store_module, "migrate", watching)
    TraceStore(tmp_path / "first.db").close()
    assert seen and seen[0] is False
    monkeypatch.setattr(store_module, "migrate", real_migrate)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []     # nothing left beside it

    problems = []
    for i in range(20):                       # bounded: 20 stores, each read while two threads make it
        path = tmp_path / f"s{i}" / "traces.db"
        done = threading.Event()

        def make():
            TraceStore(path).close()

        def read():
            while not done.is_set():
                if path.exists():
                    try:
                        TraceStore(path, create=False).close()
                    except Exception as exc:  # noqa: BLE001
                        problems.append(f"{type(exc).__name__}: {exc}")
                    return

        reader = threading.Thread(target=read)
        reader.start()
        makers = [threading.Thread(target=make) for _ in range(2)]
        for t in makers:
            t.start()
        for t in makers:
            t.join(30)
        done.set()
        reader.join(30)
        with TraceStore(path, create=False) as store:
            assert store.trace_count() == 0
    assert problems == []
