"""The OTLP environment has one home (gwtrace.export.otlpenv), tested once here.

The rules are the OpenTelemetry specification's; then every client that
talks to a collector (the sidecar's exporter, ``gwtrace ingest``'s
Forwarder, the snapshot sender, the snapshot target, the endpoint warning)
is shown to take its settings from that home, and no other module reads an
``OTEL_EXPORTER_OTLP_*`` variable itself.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from conftest import REPO
from otlp_receiver import OtlpReceiver

from gwtrace.export import otlpenv
from gwtrace.export.otlpenv import DEFAULT_TIMEOUT_S, UNLIMITED_TIMEOUT_S, otlp_env

P = "OTEL_EXPORTER_OTLP_"


@pytest.mark.parametrize("env, endpoint, variable", [
    ({}, "", ""),
    ({f"{P}TRACES_ENDPOINT": "http://c:4318/custom"}, "http://c:4318/custom", f"{P}TRACES_ENDPOINT"),
    ({f"{P}ENDPOINT": "http://c:4318"}, "http://c:4318/v1/traces", f"{P}ENDPOINT"),
    ({f"{P}ENDPOINT": "http://c:4318/"}, "http://c:4318/v1/traces", f"{P}ENDPOINT"),
    ({f"{P}ENDPOINT": "https://c/base/path"}, "https://c/base/path/v1/traces", f"{P}ENDPOINT"),
    ({f"{P}ENDPOINT": "http://b:1", f"{P}TRACES_ENDPOINT": "http://t:2/x"}, "http://t:2/x", f"{P}TRACES_ENDPOINT"),
    ({f"{P}ENDPOINT": "http://b:1", f"{P}TRACES_ENDPOINT": "  "}, "http://b:1/v1/traces", f"{P}ENDPOINT"),
])
def test_endpoint_rule(env: Dict[str, str], endpoint: str, variable: str) -> None:
    got = otlp_env(env)
    assert (got.endpoint, got.endpoint_variable, got.configured) == (endpoint, variable, bool(endpoint))


def test_base_url_drops_only_the_traces_path() -> None:
    assert otlp_env({f"{P}ENDPOINT": "http://c:4318/"}).base_url == "http://c:4318"
    assert otlp_env({f"{P}TRACES_ENDPOINT": "http://c/x/v1/traces/"}).base_url == "http://c/x"
    assert otlp_env({f"{P}TRACES_ENDPOINT": "http://c/custom"}).base_url == "http://c/custom"


def test_headers_are_url_encoded_pairs_and_the_signal_variable_wins() -> None:
    raw = "Authorization=Bearer%20abc , x-tenant = a%3Db ,novalue,=nokey,,k=v=w"
    assert otlp_env({f"{P}HEADERS": raw}).headers == {"Authorization": "Bearer abc", "x-tenant": "a=b", "k": "v=w"}
    both = {f"{P}HEADERS": "a=1", f"{P}TRACES_HEADERS": "b=2"}
    assert otlp_env(both).headers == {"b": "2"}
    assert otlp_env({}).headers == {}


@pytest.mark.parametrize("env, seconds", [
    ({}, DEFAULT_TIMEOUT_S),
    ({f"{P}TIMEOUT": "2500"}, 2.5),
    ({f"{P}TIMEOUT": "0"}, UNLIMITED_TIMEOUT_S),
    ({f"{P}TIMEOUT": "5000", f"{P}TRACES_TIMEOUT": "1000"}, 1.0),
    ({f"{P}TIMEOUT": "5000", f"{P}TRACES_TIMEOUT": "soon"}, 5.0),   # a bad value is skipped
    ({f"{P}TIMEOUT": "-1"}, DEFAULT_TIMEOUT_S),
])
def test_timeout_is_milliseconds(env: Dict[str, str], seconds: float) -> None:
    assert otlp_env(env).timeout_s == seconds


@pytest.mark.parametrize("env, compression", [
    ({}, "none"), ({f"{P}COMPRESSION": "gzip"}, "gzip"), ({f"{P}COMPRESSION": " GZIP "}, "gzip"),
    ({f"{P}COMPRESSION": "none"}, "none"), ({f"{P}COMPRESSION": "brotli"}, "none"),
    ({f"{P}COMPRESSION": "gzip", f"{P}TRACES_COMPRESSION": "none"}, "none"),
])
def test_compression_is_gzip_or_none(env: Dict[str, str], compression: str) -> None:
    assert otlp_env(env).compression == compression


def test_certificates_signal_first() -> None:
    env = {f"{P}CERTIFICATE": "/ca", f"{P}TRACES_CLIENT_KEY": "/k", f"{P}CLIENT_KEY": "/k0",
           f"{P}CLIENT_CERTIFICATE": "/c"}
    got = otlp_env(env)
    assert (got.certificate, got.client_key, got.client_certificate) == ("/ca", "/k", "/c")
    assert otlp_env({}).certificate is None


def test_no_other_module_reads_an_otlp_variable() -> None:
    """A quoted variable name is a lookup; docstrings name them in ``backquotes``."""
    offenders = []
    for path in sorted((REPO / "sidecar" / "gwtrace").rglob("*.py")):
        if path.name == "otlpenv.py":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"[\"']OTEL_EXPORTER_OTLP_", line):
                offenders.append(f"{path.relative_to(REPO)}:{n}")
    assert offenders == []


# --- every client takes the home's settings ---

def _env(receiver: OtlpReceiver) -> Dict[str, str]:
    base = receiver.endpoint[: -len("/v1/traces")]
    return {f"{P}ENDPOINT": base + "/", f"{P}HEADERS": "Authorization=Bearer%20t0k", f"{P}COMPRESSION": "gzip",
            f"{P}TIMEOUT": "1500"}


def test_the_exporter_sends_with_the_home_settings(receiver: OtlpReceiver) -> None:
    from gwtrace.export.otlp import make_otlp_exporter, to_readable_spans
    from opentelemetry.sdk.resources import Resource
    from test_exporter import records

    exporter, _session, endpoint = make_otlp_exporter(_env(receiver))
    assert endpoint == receiver.endpoint
    exporter.export(to_readable_spans(records()[:3], Resource.create({})))
    assert len(receiver.wait_for(3)) == 3
    assert receiver.headers[-1]["content-encoding"] == "gzip"
    assert receiver.headers[-1]["authorization"] == "Bearer t0k"
    exporter.shutdown()


def test_ingest_forwards_with_the_home_settings(receiver: OtlpReceiver, monkeypatch: pytest.MonkeyPatch) -> None:
    from gwtrace.factory.ingest import Forwarder

    for key, value in _env(receiver).items():
        monkeypatch.setenv(key, value)
    forwarder = Forwarder()
    assert (forwarder.endpoint, forwarder.timeout) == (receiver.endpoint, 1.5)
    request = ExportTraceServiceRequest()
    request.resource_spans.add().scope_spans.add().spans.add(trace_id=b"\1" * 16, span_id=b"\2" * 8, name="s")
    forwarder.send(request)
    assert [s.name for s in receiver.wait_for(1)] == ["s"]
    assert receiver.headers[-1]["content-encoding"] == "gzip"
    assert receiver.headers[-1]["authorization"] == "Bearer t0k"


def test_the_snapshot_sender_and_target_use_the_home() -> None:
    from gwtrace.sidecar.snapshot import snapshot_target
    from gwtrace.sidecar.snapshot_send import HttpSender

    env = {f"{P}ENDPOINT": "http://c:4318/", f"{P}TRACES_HEADERS": "Authorization=Bearer%20x",
           f"{P}COMPRESSION": "gzip", f"{P}TIMEOUT": "1500", "GWTRACE_SNAPSHOT_ENDPOINT": "gwtrace"}
    kind, url = snapshot_target(env)
    assert (kind, url) == ("url", "http://c:4318/v1/gwtrace/snapshot")
    sender = HttpSender(url, env)
    assert sender.headers["Authorization"] == "Bearer x" and sender.headers["Content-Encoding"] == "gzip"
    assert sender.gzip and sender.timeout == 1.5


def test_the_endpoint_warning_names_the_variable_as_set() -> None:
    from gwtrace.export.reachability import endpoint_problem

    problem = endpoint_problem({f"{P}ENDPOINT": "ftp://c"})
    assert problem is not None and problem.startswith(f"{P}ENDPOINT='ftp://c' is not an http(s)://host URL")
    assert endpoint_problem({f"{P}ENDPOINT": "http://c:4318"}) is None


def test_module_is_standard_library_only() -> None:
    """The snapshot sender imports it on nodes: nothing but the standard library."""
    imports = re.findall(r"^(?:from|import) (\S+)", Path(otlpenv.__file__).read_text(), re.M)
    assert set(imports) <= {"__future__", "logging", "os", "urllib.parse", "typing"}


def test_the_metrics_endpoint_follows_the_traces_rule() -> None:
    from gwtrace.export.otlpenv import metrics_endpoint

    assert metrics_endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}) == "http://c:4318/v1/metrics"
    assert metrics_endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
                             "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://m/x"}) == "http://m/x"
    assert metrics_endpoint({}) == ""
