"""``gwtrace job``'s resource figures (peak memory against request_memory, CPU efficiency) and ``--why`` on a job
held for memory using the peak the sidecar sampled (``store.metrics``)."""

from __future__ import annotations

import io

import journey_gen as gen
from gwtrace.cli.job import main as job_main
from gwtrace.store import TraceStore
from metrics_gen import MB, request, resource, series_of, subject
from test_journey import T0, ingest, job
from test_journey_why import TRACE, traced  # noqa: F401  (the fixture)


def test_gwtrace_job_prints_peak_memory_against_the_request_and_cpu_efficiency(traced):  # noqa: F811
    with TraceStore(traced) as store:
        times = [i * 30 for i in range(11)]
        store.put_metrics(request([subject(
            resource(job_id="77.0", trace_id=TRACE, glidein="g-7", request_cpus=16, request_memory_mb=99999,
                     source="cgroup-v2"),                  # a node's word: the job ad's requests (1, 2000) win
            rss=series_of(times, [int(1500 * MB)] * 11, t0=(T0 + 600) * 10**9),
            peak=series_of(times, [int(2600 * MB)] * 11, t0=(T0 + 600) * 10**9),
            cpu_user=series_of(times, [3.0 * t for t in times], t0=(T0 + 600) * 10**9))]))
    out = io.StringIO()
    assert job_main(["77.0", "--store", str(traced), "--now", str(T0 + 10_000)], out) == 0
    line = [x for x in out.getvalue().splitlines() if x.startswith("resources:")]
    assert line == ["resources: job 77.0 in glidein g-7 (cgroup-v2): peak memory 2,600 MB of 2,000 MB requested "
                    "(130%): OVER the request; CPU: 3.00 cores busy on average, efficiency 300% of request_cpus = 1: "
                    "MORE cores than requested"]
    figures = job(traced, "77.0")["resources"]["figures"]
    assert figures[0]["peak_mb"] == 2600 and figures[0]["cpu_efficiency"] == 3.0
    assert figures[0]["requests_from"] == "job ad"


def test_a_job_without_samples_prints_no_resource_line(traced):  # noqa: F811
    out = io.StringIO()
    assert job_main(["77.0", "--store", str(traced), "--now", str(T0 + 10_000)], out) == 0
    assert "resources:" not in out.getvalue()
    assert job(traced, "77.0")["resources"] == {"figures": []}


def test_why_for_a_job_held_for_memory_uses_the_sampled_peak(traced, tmp_path):  # noqa: F811
    log = tmp_path / "h.log"
    log.write_text(gen.submitted(60, 0, T0) + gen.executing(60, 0, T0 + 10)
                   + gen.held(60, 0, T0 + 20, "Job has gone over memory limit of 2048 megabytes.", 34, 102))
    ingest(traced, log, schedd="submit.example.org")
    before = job(traced, "60.0", "--why", now=T0 + 620)["why"]["reasons"][0]
    assert "sampled" not in before["advice"]
    trace_id = job(traced, "60.0")["job"]["trace_id"]
    with TraceStore(traced) as store:
        store.put_metrics(request([subject(resource(job_id="60.0", trace_id=trace_id, source="cgroup-v2"),
                                           rss=series_of([0, 5, 10], [int(x * MB) for x in (900, 1800, 2600)],
                                                         t0=(T0 + 10) * 10**9))]))
    (reason,) = job(traced, "60.0", "--why", now=T0 + 620)["why"]["reasons"]
    assert "peak memory sampled by the sidecar: 2600 MB (the sidecar's samples, cgroup-v2)" in reason["evidence"]
    assert "request_memory = 3200" in reason["advice"] and "2600 MB peak the sidecar sampled" in reason["advice"]
