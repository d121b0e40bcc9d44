"""`POST /v1/metrics` under hostile input (issue 33): the bounds of ``store.metrics`` hold with four requests
in flight: bounded memory, /healthz answering, no 500; what the limits let through is stored."""

from __future__ import annotations

import time

import pytest
import requests

from abuse_harness import HealthProbe, WatchedServer, field, gzipped, in_parallel
from test_abuse_serve import HEALTHZ_SECONDS, PEAK_RSS_BYTES

T0 = 1_760_000_000 * 10**9


@pytest.fixture
def server(tmp_path):
    s = WatchedServer(str(tmp_path / "abuse.db"))
    yield s
    s.stop()


def points_body(n_metrics: int, per_metric: int) -> bytes:
    """``n_metrics`` gauges of ``per_metric`` points (time, double) each, in one ResourceMetrics, hand-encoded."""
    metrics = b""
    for k in range(n_metrics):
        points = b"".join(field(0x0A, b"\x19" + (T0 + i * 10**9).to_bytes(8, "little") + b"\x21" + bytes(8))
                          for i in range(per_metric))
        metrics += field(0x12, field(0x0A, f"m{k}".encode()) + field(0x2A, points))      # Metric.name, .gauge
    return field(0x0A, field(0x12, metrics))           # ExportMetricsServiceRequest.resource_metrics[].scope_metrics


@pytest.mark.parametrize("n_metrics, per_metric, expected", [
    (1, 400_000, 413),       # 7.6 MiB of the smallest points: over the points a request may hold
    (1, 1_000_000, 413),     # over the body cap
    (64, 1024, 200),         # 65,536 points in 64 series: the most one request may keep
    (256, 256, 200),         # too many series: 64 kept, the others counted as rejected
])
def test_four_metrics_requests_keep_memory_and_healthz(server, n_metrics, per_metric, expected):
    body = gzipped(points_body(n_metrics, per_metric))
    with HealthProbe(server.url, limit_s=90) as probe:
        time.sleep(0.2)
        answers = in_parallel([lambda: requests.post(
            server.url + "/v1/metrics", data=body, timeout=60,
            headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"})] * 4, timeout_s=90)
        time.sleep(0.3)
    assert server.killed_at is None, f"server killed at {server.killed_at >> 20} MB"
    codes = [a.status_code if isinstance(a, requests.Response) else repr(a) for a in answers]
    assert all(c in (expected, 503) for c in codes) and expected in codes, codes
    assert not probe.failures and probe.latencies, probe.failures
    assert max(probe.latencies) < HEALTHZ_SECONDS, max(probe.latencies)
    assert server.peak_rss() < PEAK_RSS_BYTES, f"peak RSS {server.peak_rss() >> 20} MB"
