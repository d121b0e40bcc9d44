"""Resource metrics end to end: real processes sampled from /proc in the test, sent by the OpenTelemetry SDK's own
OTLP/HTTP metrics exporter to a ``gwtrace serve`` process on loopback, then found by ``gwtrace analyze`` (a job
that allocates memory step by step is a leak; an idle one is not) and shown by ``gwtrace job``'s store reads.

The first test samples with the SDK's own MeterProvider (what any OpenTelemetry process would send); the last has
no stand-in at all: the real sidecar samples a job run by the real job wrapper and sends to `gwtrace serve`."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from typing import Dict, List

import pytest

from gwtrace.store import TraceStore
from test_server_serve import Server

PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")
#: a child that allocates (and touches) 16 MB each time it reads a line, and says so
ALLOCATOR = ("import sys\nheld = []\nfor line in sys.stdin:\n    held.append(bytearray(b'x') * (16 << 20))\n"
             "    print(len(held), flush=True)\n")


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * PAGE


def _cpu(pid: int) -> Dict[str, float]:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return {"user": int(fields[11]) / TICK, "system": int(fields[12]) / TICK}


def _provider(url: str, attrs: Dict[str, object], pid: int):
    """A MeterProvider whose gauges and counter read ``pid`` from /proc at each collection (force_flush)."""
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.metrics import CallbackOptions, Observation
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource

    reader = PeriodicExportingMetricReader(OTLPMetricExporter(endpoint=url + "/v1/metrics", timeout=10),
                                           export_interval_millis=3_600_000)
    provider = MeterProvider(resource=Resource(attrs), metric_readers=[reader])
    meter = provider.get_meter("gwtrace.resources")

    def rss(_options: CallbackOptions) -> List[Observation]:
        return [Observation(_rss(pid))]

    def cpu(_options: CallbackOptions) -> List[Observation]:
        return [Observation(v, {"cpu.mode": mode}) for mode, v in _cpu(pid).items()]

    meter.create_observable_gauge("process.memory.usage", [rss], unit="By")
    meter.create_observable_counter("process.cpu.time", [cpu], unit="s")
    return provider


def _job(trace: str, job_id: str) -> Dict[str, object]:
    return {"service.name": "glidein", "glidein.uuid": "g-real", "glidein.site": "SiteR", "host.name": "wn-test",
            "gwtrace.subject": "job", "condor.job.id": job_id, "condor.job.owner": "tester",
            "gwtrace.trace_id": trace, "job.request_cpus": 1, "job.request_memory_mb": 100,
            "gwtrace.resources.source": "proc"}


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads /proc")
def test_real_processes_sampled_sent_by_the_sdk_exporter_are_kept_and_found(tmp_path) -> None:
    db = tmp_path / "serve.db"
    server = Server("--db", str(db))
    leaker = subprocess.Popen([sys.executable, "-c", ALLOCATOR], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        leaking = _provider(server.url, _job("a" * 32, "500.0"), leaker.pid)
        steady = _provider(server.url, _job("b" * 32, "501.0"), idle.pid)
        for step in range(10):                      # bounded: 10 samples, ~0.2 s apart
            leaker.stdin.write("more\n")
            leaker.stdin.flush()
            assert leaker.stdout.readline().strip() == str(step + 1)
            assert leaking.force_flush(10_000) and steady.force_flush(10_000)
            time.sleep(0.2)
        leaking.shutdown()
        steady.shutdown()
    finally:
        leaker.kill()
        idle.kill()
        leaker.wait()
        idle.wait()
        rc, err = server.stop()
    assert rc == 0, err
    with TraceStore(db, create=False) as store:
        job, = store.metric_subjects(trace_id="a" * 32)
        rss = [s for s in store.metric_series(job["id"]) if s["name"] == "process.memory.usage"][0]["points"]
        assert len(rss) >= 10 and rss[-1][1] - rss[0][1] >= 9 * 15 * 2**20     # ~16 MB a step (shutdown adds one)
        peak, = store.metric_peaks(ids=[job["id"]])
        assert peak["peak_mb"] > 100 and peak["memory_ratio"] > 1
    from gwtrace.cli.analyze import main

    out = io.StringIO()
    assert main(["--store", str(db), "--hints", "--format", "json", "--workers", "1"], out, io.StringIO()) == 0
    import json

    found = {(h["kind"], h["glideins"][0]["job_id"]) for h in json.loads(out.getvalue())["hints"]}
    assert ("memory_leak", "500.0") in found and ("memory_over_request", "500.0") in found
    assert not any(job_id == "501.0" and kind == "memory_leak" for kind, job_id in found)


def test_gwtrace_ingest_forwards_metrics_blocks_to_the_collectors_v1_metrics(tmp_path, monkeypatch) -> None:
    from gwtrace.factory.ingest import ingest_outputs
    from gwtrace.wire.blocks import frame
    from metrics_gen import leaking_job, request

    db = tmp_path / "serve.db"
    server = Server("--db", str(db))
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", server.url)
        for var in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "GWTRACE_OTLP_TOKEN_FILE"):
            monkeypatch.delenv(var, raising=False)
        err_file = tmp_path / "job.9.0.err"
        err_file.write_text(frame("metrics", request([leaking_job("c" * 32, n=8)]).SerializeToString(), host="wn"))
        err = io.StringIO()
        assert ingest_outputs([str(err_file)], None, str(tmp_path / "ledger"), 0, err) == 0, err.getvalue()
        assert "1 metrics block(s)" in err.getvalue()
    finally:
        rc, log = server.stop()
    assert rc == 0, log
    with TraceStore(db, create=False) as store:
        job, = store.metric_subjects(trace_id="c" * 32)
        assert sum(len(s["points"]) for s in store.metric_series(job["id"])) == 16


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads /proc")
def test_a_real_sidecars_job_reaches_gwtrace_serve_job_and_the_page(tmp_path) -> None:
    """No stand-in: `gwtrace sidecar start` samples a job run by the real job wrapper (allocating 16 MiB a step)
    and sends spans and metrics to a `gwtrace serve`; `gwtrace job` says the peak against request_memory and
    /ui/api/resources charts the job's memory for its trace."""
    import json
    import urllib.request

    import journey_gen as gen
    from conftest import GWTRACE, REPO, Sidecar, clean_env
    from test_journey import ingest, job as job_json

    steps = ("import time\nheld = []\nfor i in range(6):\n    held.append(bytearray(b'x' * (16 << 20)))\n"
             "    time.sleep(0.5)\ntime.sleep(1.5)\n")
    now = int(time.time())
    db = tmp_path / "serve.db"
    condor_log = tmp_path / "job.log"           # the schedd's word: the job, and the trace its journey is in
    condor_log.write_text(gen.submitted(88, 0, now - 20) + gen.executing(88, 0, now - 10))
    ingest(db, condor_log, schedd="submit.example.org")
    trace = job_json(db, "88.0", now=now)["job"]["trace_id"]
    span = "10f067aa0ba902b7"
    server = Server("--db", str(db))
    ad = tmp_path / ".job.ad"
    ad.write_text(f'ClusterId = 88\nProcId = 0\nOwner = "alice"\nRequestCpus = 1\nRequestMemory = 64\n'
                  f'TraceParent = "00-{trace}-{span}-01"\n')
    env = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=server.url + "/v1/traces", GWTRACE_HOME=str(tmp_path / "home"),
                    OTEL_EXPORTER_OTLP_TIMEOUT="5000", GWTRACE_STOP_TIMEOUT="10", GWTRACE_GLIDEIN_PID=str(os.getpid()))
    sidecar = Sidecar(tmp_path / "gw", env)
    try:
        job_env = sidecar.start()
        job_env.update(_CONDOR_JOB_AD=str(ad), GWTRACE_JOB_RESOURCE_INTERVAL="1")
        job = subprocess.run(["dash", str(REPO / "shim" / "gwtrace-job-wrapper"), sys.executable, "-c", steps],
                             env=job_env, capture_output=True, timeout=60)
        assert job.returncode == 0, job.stderr
        stopped = sidecar.stop()
        assert stopped.returncode == 0, stopped.stderr
        with urllib.request.urlopen(f"{server.url}/ui/api/resources/{trace}", timeout=10) as answer:
            charts = json.load(answer)["subjects"]
        glidein_uuid = [s for s in charts if s.get("job_id") == "88.0"][0]["glidein"]
        with urllib.request.urlopen(f"{server.url}/ui/api/resources/{trace}?glidein={glidein_uuid}",
                                    timeout=10) as answer:
            node = [s for s in json.load(answer)["subjects"] if s["kind"] == "glidein"]
    finally:
        if sidecar.pid is not None:
            sidecar.stop()
        rc, err = server.stop()
    assert rc == 0, err
    job, = [s for s in charts if s.get("job_id") == "88.0"]
    assert job["trace_id"] == trace and job["request_memory_mb"] == 64
    assert node and node[0]["load"] and node[0]["machine_cores"] == os.cpu_count()     # the node's side of the chart
    rss = [mb for _, mb in job["rss_mb"]]
    assert len(rss) >= 3 and rss[-1] - rss[0] >= 48, rss            # 16 MiB a step, sampled every second
    out = subprocess.run([GWTRACE, "job", "88.0", "--store", str(db), "--format", "json"], capture_output=True,
                         text=True, timeout=60, env=clean_env(GWTRACE_HOME=str(tmp_path / "home")))
    assert out.returncode == 0, out.stderr
    figures, = json.loads(out.stdout)["resources"]["figures"]
    assert figures["request_memory_mb"] == 64 and figures["peak_mb"] >= max(rss) > 64, figures
    assert figures["memory_ratio"] > 1 and figures["requests_from"] != "job ad"
    text = subprocess.run([GWTRACE, "job", "88.0", "--store", str(db)], capture_output=True, text=True, timeout=60,
                          env=clean_env(GWTRACE_HOME=str(tmp_path / "home"))).stdout
    assert "resources: job 88.0" in text and "of 64 MB requested" in text and "OVER the request" in text, text
