"""Search by operation and window (Jaeger's): answered from trace_ops' start ranges (schema 8), and the
migration that builds those ranges for an older store."""

from __future__ import annotations

import sqlite3

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from gwtrace.store import SCHEMA_VERSION, TraceStore
from test_store import T0, TRACE_A, TRACE_B, make_request

JOBS = [10_000, 50_000, 90_000]   # starts of TRACE_A's three "job" spans


def _ids(found):
    return [t["trace_id"] for t in found]


def _fill(store: TraceStore) -> None:
    """TRACE_A: a glidein with three jobs; TRACE_B: a glidein of another service's job span, one job."""
    store.ingest(make_request([dict(span=1, name="glidein", start=0, dur=100_000)]
                              + [dict(span=2 + i, parent=1, name="job", start=s, dur=1_000) for i, s in enumerate(JOBS)]))
    store.ingest(make_request([dict(trace=TRACE_B, span=1, name="glidein", start=20_000, dur=70_000),
                               dict(trace=TRACE_B, span=2, parent=1, name="job", start=30_000, dur=500,
                                    kind=Span.SPAN_KIND_SERVER)],
                              resource={"service.name": "glidein", "glidein.uuid": "u-2"}))
    store.ingest(make_request([dict(trace=TRACE_B, span=9, parent=2, name="job", start=95_000)],
                              resource={"service.name": "user-job"}))


def _searches(store: TraceStore):
    def find(lo, hi, **kw):
        return _ids(store.find_traces(service=kw.pop("service", "glidein"), operation=kw.pop("op", "job"),
                                      start_ns=None if lo is None else T0 + lo,
                                      end_ns=None if hi is None else T0 + hi, **kw))
    return {
        "both sides, one inside (decoded)": find(40_000, 60_000),
        "both sides, none inside (decoded)": find(60_000, 80_000),
        "the latest start inside": find(85_000, 92_000),
        "the earliest start inside": find(5_000, 12_000),
        "after every start": find(91_000, 99_000),
        "another service's span": find(91_000, 99_000, service="user-job"),
        "kind": find(0, 99_000, span_kind=Span.SPAN_KIND_SERVER),
        "open start": find(None, 35_000),
        "open end": find(85_000, None),
        "roots": find(15_000, 25_000, op="glidein"),
        "resource attribute": find(0, 99_000, resource_attrs={"glidein.uuid": "u-2"}),
        "span duration": find(0, 99_000, min_duration_ns=900),
        "tag": find(40_000, 60_000, tags={"span.kind": "internal"}),
        "unknown operation": find(0, 99_000, op="nope"),
    }


EXPECTED = {
    "both sides, one inside (decoded)": [TRACE_A.hex()],
    "both sides, none inside (decoded)": [],
    "the latest start inside": [TRACE_A.hex()],
    "the earliest start inside": [TRACE_A.hex()],
    "after every start": [],
    "another service's span": [TRACE_B.hex()],
    "kind": [TRACE_B.hex()],
    "open start": [TRACE_B.hex(), TRACE_A.hex()],
    "open end": [TRACE_A.hex()],
    "roots": [TRACE_B.hex()],
    "resource attribute": [TRACE_B.hex()],
    "span duration": [TRACE_A.hex()],
    "tag": [TRACE_A.hex()],
    "unknown operation": [],
}


@pytest.fixture
def store(tmp_path):
    s = TraceStore(tmp_path / "traces.db")
    _fill(s)
    yield s
    s.close()


def test_a_span_of_the_operation_must_start_in_the_window(store):
    assert _searches(store) == EXPECTED


def test_ranges_and_lags_follow_late_spans_and_replacements(store):
    """A later chunk widens a trace's range and the operation's lag; a replaced span narrows the range."""
    store.ingest(make_request([dict(span=20, parent=1, name="job", start=300_000)]))
    assert _ids(store.find_traces(service="glidein", operation="job", start_ns=T0 + 250_000,
                                  end_ns=T0 + 350_000)) == [TRACE_A.hex()]
    conn = sqlite3.connect(store.path)
    lag = "SELECT max_lag_ns FROM operations WHERE service = 'glidein' AND name = 'job' AND kind = 1"
    assert conn.execute(lag).fetchone()[0] == 300_000
    store.ingest(make_request([dict(span=20, parent=1, name="job", start=60_000)]))   # re-sent, moved
    assert conn.execute("SELECT min_start_ns - ?, max_start_ns - ? FROM trace_ops WHERE trace_id = ? AND name = 'job'",
                        (T0, T0, TRACE_A)).fetchone() == (10_000, 90_000)
    assert _ids(store.find_traces(service="glidein", operation="job", start_ns=T0 + 55_000,
                                  end_ns=T0 + 65_000)) == [TRACE_A.hex()]
    conn.close()


def test_a_version_7_store_gets_the_start_ranges(tmp_path):
    """Schema 7 kept (trace, service, name, kind) only: the ranges and lags are rebuilt from the chunks."""
    path = tmp_path / "v7.db"
    with TraceStore(path) as s:
        _fill(s)
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT * FROM trace_ops ORDER BY 1, 2, 3, 4").fetchall()
    lags = conn.execute("SELECT * FROM operations ORDER BY 1, 2, 3").fetchall()
    conn.executescript("""
        CREATE TABLE old_ops AS SELECT trace_id, service, name, kind FROM trace_ops;
        DROP TABLE trace_ops;
        CREATE TABLE trace_ops (trace_id BLOB NOT NULL, service TEXT NOT NULL, name TEXT NOT NULL,
                                kind INTEGER NOT NULL, PRIMARY KEY (trace_id, service, name, kind)) WITHOUT ROWID;
        INSERT INTO trace_ops SELECT * FROM old_ops;
        DROP TABLE old_ops;
        ALTER TABLE operations DROP COLUMN max_lag_ns;
        PRAGMA user_version = 7;
    """)
    conn.close()
    with TraceStore(path) as s:
        assert _searches(s) == EXPECTED
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 9
    assert conn.execute("SELECT * FROM trace_ops ORDER BY 1, 2, 3, 4").fetchall() == rows
    assert conn.execute("SELECT * FROM operations ORDER BY 1, 2, 3").fetchall() == lags
    assert "trace_ops_old" not in {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()


def test_an_earlier_span_arriving_late_moves_every_operations_lag(tmp_path):
    """A root that arrives last (as a live glidein's does) moves its trace's start back: the lag of
    operations stored before it must grow, or their spans' windows would miss the trace."""
    with TraceStore(tmp_path / "late.db") as s:
        svc = {"service.name": "svc2"}
        s.ingest(make_request([dict(span=2, parent=1, name="work", start=500_000)], resource=svc))
        s.ingest(make_request([dict(span=1, name="root", start=100_000, dur=900_000)], resource=svc))
        assert _ids(s.find_traces(service="svc2", operation="work", start_ns=T0 + 450_000,
                                  end_ns=T0 + 550_000)) == [TRACE_A.hex()]
        lag = sqlite3.connect(s.path).execute("SELECT max_lag_ns FROM operations WHERE name = 'work'").fetchone()[0]
        assert lag == 400_000
