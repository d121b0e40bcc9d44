"""`gwtrace serve` as a process: waitress, the official OTLP exporter, token rule, SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest
import requests

from gwtrace.cli.serve import main as serve_main
from gwtrace.server.serve import is_loopback

SERVE = "import sys; from gwtrace.cli.serve import main; sys.exit(main(sys.argv[1:]))"


class Server:
    """A `gwtrace serve` child process on a free port."""

    def __init__(self, *args: str, env: dict | None = None):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVE, "--port", "0", *args],
            stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})},
        )
        line = self.proc.stderr.readline()
        m = re.search(r"listening on (http://\S+) ", line)
        if not m:
            self.proc.kill()
            raise AssertionError(f"server did not start: {line}{self.proc.stderr.read()}")
        self.url = m.group(1)
        self.banner = line

    def stop(self) -> tuple[int, str]:
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=20)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        return rc, self.proc.stderr.read()


@pytest.fixture
def server(tmp_path):
    s = Server("--db", str(tmp_path / "serve.db"))
    yield s
    if s.proc.poll() is None:
        s.stop()


def test_official_sdk_exporter_end_to_end(server):
    """Spans from opentelemetry-sdk's OTLP/HTTP exporter (protobuf, gzip) show up in the query API."""
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "sdk-test", "glidein.uuid": "sdk-uuid"}))
    exporter = OTLPSpanExporter(endpoint=server.url + "/v1/traces", compression=Compression.Gzip, timeout=10)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("tests")
    with tracer.start_as_current_span("parent") as parent:
        with tracer.start_as_current_span("child") as child:
            child.set_attribute("answer", 42)
    provider.shutdown()
    trace_id = format(parent.get_span_context().trace_id, "032x")

    doc = requests.get(f"{server.url}/api/traces/{trace_id}", timeout=10).json()
    spans = {s["operationName"]: s for s in doc["data"][0]["spans"]}
    assert spans["child"]["references"][0]["spanID"] == format(parent.get_span_context().span_id, "016x")
    assert {"key": "answer", "type": "int64", "value": 42} in spans["child"]["tags"]
    found = requests.get(f"{server.url}/api/traces", params={"service": "sdk-test"}, timeout=10).json()
    assert [t["traceID"] for t in found["data"]] == [trace_id]
    assert requests.get(f"{server.url}/ui/api/glidein/sdk-uuid", timeout=10).status_code == 200


def test_sigterm_stops_cleanly(server):
    assert requests.get(server.url + "/healthz", timeout=5).text == "ok\n"
    rc, err = server.stop()
    assert rc == 0
    assert "gwtrace serve: stopped" in err
    assert "Traceback" not in err


def test_serves_many_requests_on_keepalive_connections(server):
    with requests.Session() as session:
        for _ in range(50):
            assert session.get(server.url + "/api/services", timeout=5).status_code == 200


def test_non_loopback_needs_a_token(capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("GWTRACE_SERVER_TOKEN", raising=False)
    assert serve_main(["--host", "0.0.0.0", "--port", "0", "--db", str(tmp_path / "x.db")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("gwtrace serve: refusing to listen on 0.0.0.0 without GWTRACE_SERVER_TOKEN")
    assert not (tmp_path / "x.db").exists()  # refused before touching anything


def test_non_loopback_with_token_requires_bearer(tmp_path):
    s = Server("--host", "0.0.0.0", "--db", str(tmp_path / "t.db"), env={"GWTRACE_SERVER_TOKEN": "tok-123"})
    try:
        assert "token required" in s.banner
        url = s.url.replace("0.0.0.0", "127.0.0.1")
        assert requests.get(url + "/api/services", timeout=5).status_code == 401
        ok = requests.get(url + "/api/services", headers={"Authorization": "Bearer tok-123"}, timeout=5)
        assert ok.status_code == 200
        assert requests.post(url + "/v1/traces", data=b"", timeout=5,
                             headers={"Content-Type": "application/x-protobuf"}).status_code == 401
    finally:
        assert s.stop()[0] == 0


@pytest.mark.parametrize("argv, needle", [
    (["--retention-days", "0"], "--retention-days must be a positive number"),
    (["--port", "70000"], "--port must be between"),
    (["--metrics-retention-days", "-1"], "--metrics-retention-days must be a positive number"),
])
def test_bad_arguments_are_one_line(capsys, tmp_path, argv, needle):
    assert serve_main(argv + ["--db", str(tmp_path / "y.db")]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_port_in_use_is_one_line(server, capsys, tmp_path):
    port = server.url.rsplit(":", 1)[1]
    assert serve_main(["--port", port, "--db", str(tmp_path / "z.db")]) == 2
    assert "cannot listen on 127.0.0.1:" + port in capsys.readouterr().err


def test_retention_days_purges_at_start(tmp_path):
    from test_store import make_request  # spans from 2023

    from gwtrace.store import TraceStore

    db = tmp_path / "old.db"
    with TraceStore(db) as store:
        store.ingest(make_request([dict(span=1)]))
    s = Server("--db", str(db), "--retention-days", "7")
    try:
        assert requests.get(s.url + "/api/services", timeout=5).json()["data"] == []
    finally:
        s.stop()


@pytest.mark.parametrize("host, loopback", [
    ("127.0.0.1", True), ("localhost", True), ("::1", True), ("[::1]", True), ("127.1.2.3", True),
    ("0.0.0.0", False), ("::", False), ("192.0.2.1", False), ("no-such-host.invalid", False),
])
def test_is_loopback(host, loopback):
    assert is_loopback(host) is loopback



def test_chunked_ingest_through_waitress(server):
    """A body without Content-Length (chunked transfer encoding) is read to its end and stored."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
    from test_store import TRACE_A, make_request

    body = make_request([dict(span=1), dict(span=2, parent=1)]).SerializeToString()
    resp = requests.post(server.url + "/v1/traces", data=iter([body[:10], body[10:]]),
                         headers={"Content-Type": "application/x-protobuf"}, timeout=10)
    assert resp.status_code == 200 and resp.headers["Content-Type"] == "application/x-protobuf"
    assert not ExportTraceServiceResponse.FromString(resp.content).HasField("partial_success")
    spans = requests.get(f"{server.url}/api/traces/{TRACE_A.hex()}", timeout=10).json()["data"][0]["spans"]
    assert len(spans) == 2


def test_serve_on_a_damaged_store_answers_503_not_500(tmp_path):
    """The real server over a store with damaged pages: OTLP gets 503 + Retry-After, no traceback."""
    from test_server_ingest import two_spans
    from test_store import damaged_store

    s = Server("--db", str(damaged_store(tmp_path / "serve.db")))
    try:
        resp = requests.post(s.url + "/v1/traces", data=two_spans().SerializeToString(), timeout=30,
                             headers={"Content-Type": "application/x-protobuf"})
        assert resp.status_code == 503 and resp.headers["Retry-After"] == "5"
        assert requests.get(s.url + "/api/services", timeout=30).status_code == 503
    finally:
        rc, stderr = s.stop()
    assert rc == 0
    assert "Traceback" not in stderr and "malformed" in stderr


def test_synthetic_data_is_not_in_the_package():
    """Benchmark and test data live under tests/: neither the wheel nor the pyz ships them."""
    import importlib.util

    assert importlib.util.find_spec("gwtrace.server.synthetic") is None


def test_metrics_retention_days_purges_samples_at_start(tmp_path):
    from metrics_gen import flat_job, request  # samples from 2025

    from gwtrace.store import TraceStore

    db = tmp_path / "old.db"
    with TraceStore(db) as store:
        store.put_metrics(request([flat_job("d" * 32, n=3)]))
    s = Server("--db", str(db), "--metrics-retention-days", "7")
    s.stop()
    with TraceStore(db, create=False) as store:
        assert store.metric_subjects() == []
