"""`gwtrace serve` under hostile input (issue 28): bounded memory, /healthz answering, no 500.

Each test starts a real server on loopback and attacks it the way the issue did, with bounded loops:
the server is killed past a hard memory ceiling (abuse_harness.HARD_CEILING_BYTES), so a regression
fails here instead of taking the machine down.
"""

from __future__ import annotations

import time

import pytest
import requests

from abuse_harness import (
    HealthProbe, WatchedServer, close_all, empty_attributes_body, empty_attributes_json, field, gzipped,
    half_sent_connections, in_parallel, request_of_span, span_head,
)

#: the issue's target for the server's peak resident size with four amplification requests in flight
PEAK_RSS_BYTES = 300 << 20
#: and for /healthz meanwhile
HEALTHZ_SECONDS = 1.0


@pytest.fixture
def server(tmp_path):
    s = WatchedServer(str(tmp_path / "abuse.db"))
    yield s
    s.stop()


def post(server: WatchedServer, body: bytes, content_type: str) -> requests.Response:
    return requests.post(server.url + "/v1/traces", data=body, timeout=60,
                         headers={"Content-Type": content_type, "Content-Encoding": "gzip"})


@pytest.mark.parametrize("count", [33_000_000, 3_000_000, 400_000])
def test_four_amplification_requests_keep_memory_and_healthz(server, count):
    """The issue's 64 KB gzip of 33 M empty attributes, and smaller ones that pass the body caps: four in
    flight at once, peak RSS under 300 MB and /healthz under 1 s; then the trace reads back."""
    body = gzipped(empty_attributes_body(count))
    assert len(body) < 70_000
    with HealthProbe(server.url, limit_s=90) as probe:
        time.sleep(0.2)
        answers = in_parallel([lambda: post(server, body, "application/x-protobuf")] * 4, timeout_s=90)
        time.sleep(0.3)
    assert server.killed_at is None, f"server killed at {server.killed_at >> 20} MB"
    codes = [a.status_code if isinstance(a, requests.Response) else repr(a) for a in answers]
    assert all(c in (200, 413, 429, 503) for c in codes), codes
    assert not probe.failures and probe.latencies, probe.failures
    assert max(probe.latencies) < HEALTHZ_SECONDS, max(probe.latencies)
    if 200 in codes:
        trace = requests.get(server.url + "/api/traces/" + "0102030405060708090a0b0c0d0e0f10", timeout=60)
        assert trace.status_code == 200
        span = trace.json()["data"][0]["spans"][0]
        assert {"key": "gwtrace.truncated", "type": "bool", "value": True} in span["tags"]
        assert len(span["tags"]) <= 128 + 8   # the span's own tags plus kind, status and scope ones
    assert server.peak_rss() < PEAK_RSS_BYTES, f"peak RSS {server.peak_rss() >> 20} MB"


SHAPES = {   # what a node could craft instead: each the most of it a request may hold (decode_cost at the limit)
    "empty spans": lambda n: field(0x0A, field(0x12, b"\x12\x00" * n)),
    "empty links": lambda n: request_of_span(span_head() + b"\x6a\x00" * n),
    "attributes with empty values": lambda n: request_of_span(span_head() + b"\x4a\x02\x12\x00" * n),
    "an array of empty values": lambda n: request_of_span(
        span_head() + field(0x4a, field(0x12, field(0x2a, b"\x0a\x00" * n)))),
}


def largest_allowed(make) -> bytes:
    """The body of ``make(n)`` for the largest n whose decode cost is within the server's limit."""
    from gwtrace.store import limits

    low, high = 1000, 10_000_000
    while high - low > 1000:
        mid = (low + high) // 2
        low, high = (mid, high) if limits.decode_cost(make(mid)) <= limits.MAX_DECODE_COST else (low, mid)
    return make(low)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_four_largest_allowed_requests_of_each_shape(server, shape):
    """Four requests at once, each as costly as the limit allows: answered (200, or 413 for too many spans,
    or 503 to retry), peak RSS under 300 MB, /healthz under 1 s."""
    body = gzipped(largest_allowed(SHAPES[shape]))
    with HealthProbe(server.url, limit_s=90) as probe:
        answers = in_parallel([lambda: post(server, body, "application/x-protobuf")] * 4, timeout_s=90)
        time.sleep(0.3)
    assert server.killed_at is None, f"server killed at {server.killed_at >> 20} MB"
    codes = [a.status_code if isinstance(a, requests.Response) else repr(a) for a in answers]
    assert all(c in (200, 413, 503) for c in codes), codes
    assert not probe.failures and max(probe.latencies) < HEALTHZ_SECONDS, (probe.failures, max(probe.latencies))
    assert server.peak_rss() < PEAK_RSS_BYTES, f"peak RSS {server.peak_rss() >> 20} MB"


@pytest.mark.parametrize("count", [2_000_000, 70_000])
def test_four_json_amplification_requests(server, count):
    """OTLP/JSON: 2 M ``{}`` attributes (the issue had 21 M), and fewer that pass the caps, four at once."""
    body = gzipped(empty_attributes_json(count))
    with HealthProbe(server.url, limit_s=90) as probe:
        answers = in_parallel([lambda: post(server, body, "application/json")] * 4, timeout_s=90)
        time.sleep(0.3)
    assert server.killed_at is None, f"server killed at {server.killed_at >> 20} MB"
    codes = [a.status_code if isinstance(a, requests.Response) else repr(a) for a in answers]
    assert all(c in (200, 413, 429, 503) for c in codes), codes
    assert max(probe.latencies) < HEALTHZ_SECONDS and not probe.failures
    if 200 in codes:
        span = requests.get(server.url + "/api/traces/" + "0102030405060708090a0b0c0d0e0f10",
                            timeout=60).json()["data"][0]["spans"][0]
        assert {"key": "gwtrace.truncated", "type": "bool", "value": True} in span["tags"]
    assert server.peak_rss() < PEAK_RSS_BYTES, f"peak RSS {server.peak_rss() >> 20} MB"


def test_deeply_nested_json_is_a_400(server):
    """JSON nested 100,000 deep: one line of 400, not a 500 RecursionError."""
    body = b'{"resourceSpans":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    resp = requests.post(server.url + "/v1/traces", data=body, timeout=30,
                         headers={"Content-Type": "application/json"})
    assert resp.status_code == 400, resp.text[:200]
    assert "deep" in resp.json()["message"]
    snap = requests.post(server.url + "/v1/gwtrace/snapshot", data=body, timeout=30,
                         headers={"Content-Type": "application/json"})
    assert snap.status_code == 400


def test_idle_half_sent_connections_do_not_stop_healthz(server):
    """120 connections that send half a request and go silent (no token needed): /healthz still answers."""
    socks = half_sent_connections(server.host, server.port, 120)
    try:
        began = time.monotonic()
        assert requests.get(server.url + "/healthz", timeout=5).status_code == 200
        assert time.monotonic() - began < HEALTHZ_SECONDS
    finally:
        close_all(socks)


def test_reading_back_a_trace_stored_before_the_limits(tmp_path):
    """The issue's trace of 33 M empty attributes, as a store written before the limits holds it (one 66 MB
    chunk): reading it back is one 413 line within a second, not 138 s and a MemoryError at 8.6 GB."""
    from abuse_harness import TRACE_ID, field, span_head

    from gwtrace.store import TraceStore
    from test_store import make_request

    db = tmp_path / "old.db"
    with TraceStore(db) as store:
        store.ingest(make_request([dict(span=1)]))
        hostile = field(0x0A, b"") + field(0x12, span_head() + b"\x4a\x00" * 33_000_000)   # a ScopeSpans
        with store.transaction() as conn:
            conn.execute("UPDATE chunks SET body = ?, trace_id = ?", (hostile, TRACE_ID))
            conn.execute("UPDATE traces SET trace_id = ?", (TRACE_ID,))
        del hostile
    server = WatchedServer(str(db))
    try:
        began = time.monotonic()
        for path in ("/api/traces/", "/api/v3/traces/", "/ui/api/critical/"):
            resp = requests.get(server.url + path + TRACE_ID.hex(), timeout=60)
            assert resp.status_code == 413 and "not read" in resp.text
        assert time.monotonic() - began < 3
        assert server.peak_rss() < PEAK_RSS_BYTES
    finally:
        server.stop()
