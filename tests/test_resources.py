"""The sidecar's resource sampler (gwtrace/sidecar/resources.py, procfs.py) and its OTLP metrics.

Real process trees (a job allocating memory step by step, a job on three cores with one requested)
are sampled through /proc; the cgroup path runs on fake v1 and v2 trees (CI may not delegate
cgroups); the metrics are received by a real OTLP/HTTP receiver, and ride home as blocks.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

from conftest import GWTRACE, REPO, Sidecar, clean_env
from gwtrace.export.metrics import count_points, to_metrics_data, to_request
from gwtrace.export.otlpenv import metrics_endpoint
from gwtrace.sidecar import procfs
from gwtrace.sidecar.channels import make_resources_dir
from gwtrace.sidecar.resources import Buffer, ResourceMonitor
from gwtrace.sidecar.subjects import Sampler, parse_registration
from gwtrace.sidecar.ship import ship_metrics
from gwtrace.wire.blocks import Block, find_blocks
from otlp_receiver import OtlpReceiver, any_value

TRACE, SPAN = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
WRAPPER = REPO / "shim" / "gwtrace-job-wrapper"

STEPS = """
import sys, time
blocks = []
for i in range(6):
    blocks.append(bytearray(b"x" * (16 << 20)))   # 16 MiB more each step, touched
    print(i, flush=True)
    time.sleep(0.4)
time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 0.0)
"""

SPIN = "import time\nwhile time.process_time() < 1.0: pass\n"


def register(directory: Path, pid: int, **extra: str) -> Path:
    make_resources_dir(str(directory))
    path = directory / "resources" / f"{TRACE}-{SPAN}"
    path.write_text("\n".join([f"pid={pid}", *(f"{k}={v}" for k, v in extra.items())]) + "\n")
    return path


def job_samples(samples, key=f"job:{TRACE}-{SPAN}"):
    return [s for s in samples if s.subject == key]


def test_a_job_allocating_step_by_step_shows_rss_rising(tmp_path: Path) -> None:
    job = subprocess.Popen([sys.executable, "-c", STEPS], stdout=subprocess.PIPE, text=True)
    try:
        register(tmp_path, job.pid, job_id="12.0", request_memory_mb="100")
        sampler = Sampler(str(tmp_path), 30.0)
        sampler.discover()
        rss: List[int] = []
        assert job.stdout is not None
        for _ in range(6):
            job.stdout.readline()                   # one step allocated
            rss += [s.rss for s in job_samples(sampler.sample(force=True))]
    finally:
        job.wait(timeout=30)
    assert len(rss) == 6
    assert all(b > a for a, b in zip(rss, rss[1:])), rss
    assert rss[-1] - rss[0] >= 60 << 20           # five steps of 16 MiB between the first and last sample
    final = job_samples(sampler.sample(force=True))
    assert final == [] and f"job:{TRACE}-{SPAN}" not in sampler.subjects   # the wrapper gone: the job is over


def test_a_job_on_three_cores_with_one_requested(tmp_path: Path) -> None:
    """Three processes, each spinning for 1 s of CPU: the tree's CPU time is their sum (3 s: three
    cores' worth within the job, whatever the wall time this shared 2-core VM gives them), and what
    the kernel's rusage of the same tree says."""
    script = f"for i in 1 2 3; do {sys.executable} -c '{SPIN}' & done; wait; sleep 1"
    job = subprocess.Popen(["sh", "-c", script])
    register(tmp_path, job.pid, request_cpus="1")
    sampler = Sampler(str(tmp_path), 30.0)
    sampler.discover()
    samples: list = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:           # until the spinners are reaped (sh is in its sleep)
        samples += job_samples(sampler.sample(force=True))
        # twice: a scan reads sh's stat, then a spinner reaped meanwhile is in neither (its CPU shows next time)
        if max(s.procs for s in samples) >= 4 and len(samples) > 1 and samples[-1].procs <= 2 >= samples[-2].procs:
            break
        time.sleep(0.1)
    _, _, usage = os.wait4(job.pid, 0)
    last = samples[-1]
    cpu = last.cpu_user_s + last.cpu_system_s
    assert cpu >= 3 * 0.95, cpu
    assert cpu == pytest.approx(usage.ru_utime + usage.ru_stime, rel=0.1, abs=0.1)
    assert sampler.subjects[f"job:{TRACE}-{SPAN}"].subject.attributes["job.request_cpus"] == 1


def fake_proc(root: Path, pids: Dict[int, int], start: int = 100, cgroup: str = "0::/\n") -> Path:
    """A /proc with ``pids`` (pid -> ppid), each started at tick ``start`` and in ``cgroup``."""
    proc = root / "proc"
    proc.mkdir()
    (proc / "stat").write_text(f"cpu 0 0 0 0\nbtime {int(time.time()) - 1000}\n")
    (proc / "loadavg").write_text("3.50 2.00 1.00 2/300 12345\n")
    for pid, ppid in pids.items():
        d = proc / str(pid)
        d.mkdir()
        fields = ["S", str(ppid)] + ["0"] * 9 + ["250", "50", "10", "0", "20", "0", "2", "0", str(start), "0",
                                                 "1000"]
        (d / "stat").write_text(f"{pid} (a job (x)) " + " ".join(fields) + "\n")
        (d / "cgroup").write_text(cgroup)
        (d / "io").write_text("rchar: 5\nwchar: 6\nread_bytes: 4096\nwrite_bytes: 8192\n")
    return proc


def test_proc_tree_sums_cpu_with_reaped_children_rss_threads_io(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, {500: 1, 501: 500, 502: 501, 600: 1})
    stats = procfs.scan(str(proc))
    assert sorted(procfs.tree(500, stats)) == [500, 501, 502]
    usage = procfs.tree_usage(procfs.tree(500, stats), stats, str(proc))
    ticks = procfs.CLK_TCK
    assert usage.cpu_user_s == pytest.approx(3 * 260 / ticks) and usage.cpu_system_s == pytest.approx(3 * 50 / ticks)
    assert usage.rss == 3 * 1000 * procfs.PAGE_SIZE and usage.threads == 6 and usage.procs == 3
    assert (usage.io_read, usage.io_write, usage.pss) == (3 * 4096, 3 * 8192, None)


def cgroup_v2(root: Path, path: str, peak: bool = True) -> None:
    d = root / path.strip("/")
    d.mkdir(parents=True)
    (d / "memory.current").write_text("734003200\n")
    if peak:
        (d / "memory.peak").write_text("900000000\n")
    (d / "cpu.stat").write_text("usage_usec 9000000\nuser_usec 7000000\nsystem_usec 2000000\n")
    (d / "pids.current").write_text("7\n")
    (d / "cgroup.procs").write_text("501\n502\n")


def cgroup_v1(root: Path, path: str, usage_files: bool = True) -> None:
    mem = root / "memory" / path.strip("/")
    mem.mkdir(parents=True)
    (mem / "memory.usage_in_bytes").write_text("524288000\n")
    (mem / "memory.max_usage_in_bytes").write_text("629145600\n")
    (mem / "tasks").write_text("501\n502\n503\n")
    (mem / "cgroup.procs").write_text("501\n502\n")
    cpu = root / "cpu,cpuacct" / path.strip("/")
    cpu.mkdir(parents=True)
    if usage_files:
        (cpu / "cpuacct.usage_user").write_text("4000000000\n")
        (cpu / "cpuacct.usage_sys").write_text("1000000000\n")
    else:
        (cpu / "cpuacct.stat").write_text(f"user {4 * procfs.CLK_TCK}\nsystem {procfs.CLK_TCK}\n")


def test_cgroup_v2_job_read_from_its_own_cgroup(tmp_path: Path) -> None:
    job_cg = "/htcondor/slot1_1"
    proc = fake_proc(tmp_path, {500: 1, 501: 500}, cgroup=f"0::{job_cg}\n")
    (proc / "500" / "cgroup").write_text("0::/glidein\n")          # the glidein: another cgroup
    cg = tmp_path / "cgroup"
    cgroup_v2(cg, job_cg)
    register(tmp_path, 501, job_id="7.0")
    sampler = Sampler(str(tmp_path), 30.0, glidein=500, proc=str(proc), cgroup_root=str(cg))
    sampler.discover()
    by = {s.subject: s for s in sampler.sample(force=True)}
    job, glidein = by[f"job:{TRACE}-{SPAN}"], by["glidein"]
    assert job.source == "cgroup-v2"
    assert (job.cpu_user_s, job.cpu_system_s, job.rss, job.peak, job.threads, job.procs) == \
        (7.0, 2.0, 734003200, 900000000, 7, 2)
    assert job.load1 is None and glidein.load1 == 3.5 and glidein.source == "proc"


def test_cgroup_v2_without_memory_peak_keeps_the_highest_sample(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, {501: 1}, cgroup="0::/job\n")
    cg = tmp_path / "cgroup"
    cgroup_v2(cg, "/job", peak=False)
    ref = procfs.read_cgroup_ref(501, str(proc))
    assert ref is not None and ref.v2 == "/job"
    usage = procfs.read_cgroup(ref, str(cg))
    assert usage is not None and usage.memory_peak is None
    register(tmp_path, 501)
    sampler = Sampler(str(tmp_path), 30.0, glidein=None, proc=str(proc), cgroup_root=str(cg))
    sampler.glidein_cgroup = procfs.CgroupRef("/glidein", {})
    sampler.discover()
    first = job_samples(sampler.sample(force=True))[0]
    (cg / "job" / "memory.current").write_text("1000\n")
    second = job_samples(sampler.sample(force=True))[0]
    assert first.peak == 734003200 and second.rss == 1000 and second.peak == 734003200


@pytest.mark.parametrize("usage_files", [True, False], ids=["usage_user", "cpuacct.stat"])
def test_cgroup_v1_job(tmp_path: Path, usage_files: bool) -> None:
    text = "12:memory:/condor/job1\n4:cpu,cpuacct:/condor/job1\n1:name=systemd:/x\n"
    proc = fake_proc(tmp_path, {501: 1}, cgroup=text)
    cg = tmp_path / "cgroup"
    cgroup_v1(cg, "/condor/job1", usage_files)
    register(tmp_path, 501)
    sampler = Sampler(str(tmp_path), 30.0, proc=str(proc), cgroup_root=str(cg))
    sampler.glidein_cgroup = procfs.CgroupRef("/", {"memory": "/", "cpuacct": "/"})
    sampler.discover()
    job = job_samples(sampler.sample(force=True))[0]
    assert job.source == "cgroup-v1"
    assert (job.cpu_user_s, job.cpu_system_s, job.rss, job.peak, job.threads, job.procs) == \
        (4.0, 1.0, 524288000, 629145600, 3, 2)


def test_a_job_in_the_glideins_own_cgroup_is_summed_over_proc(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, {500: 1, 501: 500}, cgroup="0::/glidein\n")
    cg = tmp_path / "cgroup"
    cgroup_v2(cg, "/glidein")
    register(tmp_path, 501)
    sampler = Sampler(str(tmp_path), 30.0, glidein=500, proc=str(proc), cgroup_root=str(cg))
    sampler.discover()
    assert job_samples(sampler.sample(force=True))[0].source == "proc"


def test_a_reused_pid_is_not_taken_for_the_job(tmp_path: Path) -> None:
    """The registration was written before the process with that pid started: another process."""
    btime = int(time.time()) - 1000
    proc = fake_proc(tmp_path, {501: 1}, start=999 * procfs.CLK_TCK)   # started ~1 s ago
    (proc / "stat").write_text(f"btime {btime}\n")
    path = register(tmp_path, 501)
    os.utime(path, (time.time() - 60, time.time() - 60))
    sampler = Sampler(str(tmp_path), 30.0, proc=str(proc))
    sampler.discover()
    assert sampler.subjects == {} and not path.exists()


def test_a_pid_reused_while_sampled_ends_the_job(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, {501: 1})
    register(tmp_path, 501)
    sampler = Sampler(str(tmp_path), 30.0, proc=str(proc))
    sampler.discover()
    assert job_samples(sampler.sample(force=True))
    stat = proc / "501" / "stat"
    stat.write_text(stat.read_text().replace(" 100 0 1000", " 777 0 1000"))     # a new start tick
    assert job_samples(sampler.sample(force=True)) == [] and sampler.subjects == {}


def test_registration_keeps_only_well_formed_values() -> None:
    text = "pid=12\nowner=al ice\njob_id=1.0; rm\nrequest_cpus=3\ninterval=5\nrequest_memory_mb=-1\nx=y\n"
    assert parse_registration(text) == {"pid": "12", "request_cpus": "3", "interval": "5"}


def test_a_job_asks_for_a_finer_interval(tmp_path: Path) -> None:
    register(tmp_path, os.getpid(), interval="2")
    sampler = Sampler(str(tmp_path), 30.0)
    sampler.discover()
    now = time.monotonic()
    assert job_samples(sampler.sample(now))
    assert not job_samples(sampler.sample(now + 1.5))
    assert job_samples(sampler.sample(now + 2.1))


def test_the_buffer_is_bounded_and_counts_what_it_dropped(tmp_path: Path) -> None:
    register(tmp_path, os.getpid())
    monitor = ResourceMonitor(Sampler(str(tmp_path), 30.0), Buffer(100), dict, send=None)
    for _ in range(30):
        monitor.round(force=True)
    status = monitor.status()
    assert status["resource_points_pending"] <= 100
    assert status["resource_points_dropped"] > 0
    assert status["resource_points_pending"] + status["resource_points_dropped"] == \
        sum(s.points for s in monitor.buffer.samples) + monitor.buffer.dropped


def test_metrics_carry_the_contracts_names_and_attributes(tmp_path: Path) -> None:
    register(tmp_path, os.getpid(), job_id="123.0", owner="alice", request_cpus="1", request_memory_mb="2048")
    sampler = Sampler(str(tmp_path), 30.0, glidein=os.getppid())
    sampler.discover()
    samples = sampler.sample(force=True)
    request = to_request(to_metrics_data(samples, sampler.subjects_for_export(),
                                         {"service.name": "glidein", "glidein.uuid": "u-1"}))
    assert count_points(request) == sum(s.points for s in samples)
    by_subject = {}
    for rm in request.resource_metrics:
        attrs = {kv.key: any_value(kv.value) for kv in rm.resource.attributes}
        assert rm.scope_metrics[0].scope.name == "gwtrace.resources"
        by_subject[attrs["gwtrace.subject"]] = (attrs, {m.name: m for m in rm.scope_metrics[0].metrics})
    attrs, metrics = by_subject["job"]
    assert attrs["condor.job.id"] == "123.0" and attrs["condor.job.owner"] == "alice"
    assert attrs["gwtrace.trace_id"] == TRACE and attrs["gwtrace.span_id"] == SPAN
    assert attrs["job.request_cpus"] == 1 and attrs["job.request_memory_mb"] == 2048
    assert attrs["glidein.uuid"] == "u-1" and attrs["gwtrace.resources.source"] == "proc"
    cpu = metrics["process.cpu.time"].sum
    assert cpu.is_monotonic and cpu.aggregation_temporality == 2          # cumulative
    assert {any_value(p.attributes[0].value) for p in cpu.data_points} == {"user", "system"}
    assert metrics["process.memory.usage"].unit == "By" and metrics["process.memory.usage"].gauge.data_points
    for name in ("process.memory.peak", "process.thread.count", "process.count", "process.disk.io"):
        assert name in metrics
    assert "system.cpu.load_average.1m" not in metrics and "system.cpu.logical.count" not in metrics
    glidein = by_subject["glidein"][1]
    assert "system.cpu.load_average.1m" in glidein
    cpus = glidein["system.cpu.logical.count"]                            # an UpDownCounter: non-monotonic sum
    assert cpus.unit == "{cpu}" and not cpus.sum.is_monotonic and cpus.sum.data_points[0].as_int == os.cpu_count()


def test_metrics_endpoint_rules() -> None:
    assert metrics_endpoint({"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://a/m"}) == "http://a/m"
    assert metrics_endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318/"}) == "http://a:4318/v1/metrics"
    assert metrics_endpoint({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://a/x/v1/traces"}) == "http://a/x/v1/metrics"
    assert metrics_endpoint({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://a/traces"}) == ""


def test_undelivered_metrics_ride_home_as_blocks(tmp_path: Path) -> None:
    register(tmp_path, os.getpid(), job_id="5.1")
    monitor = ResourceMonitor(Sampler(str(tmp_path), 30.0), Buffer(10_000), lambda: {"service.name": "glidein"})
    for _ in range(3):
        monitor.round(force=True)
    pending = monitor.buffer.points
    out = tmp_path / "glidein.err"
    with open(out, "w") as f:
        assert ship_metrics(monitor.leftover_requests(), f) == pending
    blocks = [b for b in find_blocks(out.read_bytes())]
    assert blocks and all(isinstance(b, Block) and b.kind == "metrics" for b in blocks)
    request = ExportMetricsServiceRequest()
    request.ParseFromString(blocks[0].payload)
    assert count_points(request) == int(blocks[0].meta["points"]) == pending
    assert monitor.buffer.points == 0


# -- the sidecar and the job wrapper, end to end ------------------------------------------------------------

def _points(requests, subject: str, name: str) -> List[tuple]:
    out = []
    for req in requests:
        for rm in req.resource_metrics:
            attrs = {kv.key: any_value(kv.value) for kv in rm.resource.attributes}
            if attrs.get("gwtrace.subject") != subject:
                continue
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    if m.name == name:
                        data = getattr(m, m.WhichOneof("data"))
                        out += [(p.time_unix_nano, p.as_int or p.as_double, attrs) for p in data.data_points]
    return sorted(out, key=lambda p: p[0])


def test_the_sidecar_sends_a_wrapped_jobs_metrics_to_an_otlp_receiver(tmp_path: Path) -> None:
    receiver = OtlpReceiver().start()
    ad = tmp_path / ".job.ad"
    ad.write_text(f'ClusterId = 77\nProcId = 0\nOwner = "alice"\nRequestCpus = 1\nRequestMemory = 64\n'
                  f'TraceParent = "00-{TRACE}-{SPAN}-01"\n')
    env = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.endpoint, GWTRACE_HOME=str(tmp_path / "home"),
                    OTEL_EXPORTER_OTLP_TIMEOUT="2000", GWTRACE_STOP_TIMEOUT="5", GWTRACE_GLIDEIN_PID=str(os.getpid()))
    sidecar = Sidecar(tmp_path / "gw", env)
    try:
        env = sidecar.start()
        env.update(_CONDOR_JOB_AD=str(ad), GWTRACE_JOB_RESOURCE_INTERVAL="1")
        job = subprocess.run(["dash", str(WRAPPER), sys.executable, "-c", STEPS, "1"], env=env,
                             capture_output=True, timeout=60)
        assert job.returncode == 0, job.stderr
        requests = receiver.wait_for_metrics(lambda r: len(_points(r, "job", "process.memory.usage")) >= 3)
        status = sidecar.status()
    finally:
        sidecar.stop()
        receiver.stop()
    rss = [v for _, v, _ in _points(requests, "job", "process.memory.usage")]
    assert len(rss) >= 3 and max(rss) - rss[0] >= 32 << 20, rss
    attrs = _points(requests, "job", "process.memory.usage")[0][2]
    assert attrs["condor.job.id"] == "77.0" and attrs["job.request_memory_mb"] == 64
    assert attrs["gwtrace.trace_id"] == TRACE
    assert _points(requests, "glidein", "system.cpu.load_average.1m")
    assert int(status["resource_points_exported"]) > 0 and status["resource_points_dropped"] == "0"
    assert not list((tmp_path / "gw" / "resources").iterdir())     # the wrapper took its registration back


def test_a_collector_that_fails_keeps_the_points_one_that_refuses_stops_the_sampling(tmp_path: Path) -> None:
    from gwtrace.export.metrics import OtlpMetricsSender

    receiver = OtlpReceiver().start()
    try:
        register(tmp_path, os.getpid())
        sender = OtlpMetricsSender(f"http://127.0.0.1:{receiver.port}/v1/metrics")
        monitor = ResourceMonitor(Sampler(str(tmp_path), 30.0), Buffer(10_000), dict, sender.send, "test")
        receiver.metrics_status = 503
        monitor.round(now=100.0, force=True)
        held = monitor.buffer.points
        assert held > 0 and monitor.counters["resource_export_failures"] == 1
        assert "503" in monitor.last_error and monitor.counters["resource_points_exported"] == 0
        receiver.metrics_status = 200
        monitor.round(now=100.5)                        # backing off: not retried yet
        assert monitor.buffer.points == held
        monitor.round(now=102.0, force=True)            # retried: both samples delivered
        assert monitor.buffer.points == 0 and monitor.counters["resource_points_exported"] >= 2 * held - 2
        assert len(receiver.metrics) == 1
        receiver.metrics_status = 404                   # a traces-only collector: dropped, counted, sampling stops
        monitor.round(now=200.0, force=True)
        assert monitor.buffer.points == 0 and monitor.counters["resource_points_dropped"] > 0
        samples = monitor.counters["resource_samples"]
        assert monitor.round(now=300.0, force=True) == 0 and monitor.counters["resource_samples"] == samples
        monitor.finish(None, 1.0)
        assert monitor.buffer.points == 0 and "404" in monitor.refused
    finally:
        receiver.stop()


def test_the_embedded_store_keeps_a_sidecars_metrics(tmp_path: Path, monkeypatch) -> None:
    """A sidecar whose destination is a store file: the real TraceStore.put_metrics, read back by trace."""
    from gwtrace.sidecar.destination import make_delivery, make_metrics_send
    from gwtrace.store import TraceStore

    for name in [k for k in os.environ if k.startswith(("OTEL_", "GWTRACE_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("GWTRACE_HOME", str(tmp_path / "home"))
    delivery = make_delivery()
    try:
        send, where = make_metrics_send(delivery)
        assert send is not None and where.startswith("embedded store"), where
        register(tmp_path, os.getpid(), job_id="9.0", request_memory_mb="64")
        monitor = ResourceMonitor(Sampler(str(tmp_path), 30.0), Buffer(10_000), lambda: {"glidein.uuid": "u-9"},
                                  send, where)
        monitor.round(now=100.0, force=True)
        monitor.round(now=200.0, force=True)
        exported = monitor.counters["resource_points_exported"]
        assert exported > 0 and monitor.buffer.points == 0 and monitor.counters["resource_export_failures"] == 0
    finally:
        delivery.shutdown()
    with TraceStore(where[len("embedded store "):]) as store:
        jobs = store.metric_subjects(trace_id=TRACE)
        assert [(j["kind"], j["job_id"], j["span_id"], j["glidein"]) for j in jobs] == [("job", "9.0", SPAN, "u-9")]
        series = {s["name"]: s for s in store.metric_series(jobs[0]["id"])}
        assert len(series["process.memory.usage"]["points"]) == 2
        assert sum(len(s["points"]) for s in store.metric_series(jobs[0]["id"])) == exported
        peak = store.metric_peaks(ids=[jobs[0]["id"]])[0]
        assert peak["request_memory_mb"] == 64 and peak["peak_mb"] > 1


def test_the_glideins_cores_and_trace_reach_the_store(tmp_path: Path) -> None:
    """Node and factory agree on the names: the machine's CPUs (system.cpu.logical.count, for the
    oversubscription hint) and the glidein's trace (published in glidein_config after the sidecar started)."""
    from gwtrace.store import TraceStore

    config = tmp_path / "glidein_config"
    config.write_text(f"GLIDEIN_STARTUP_PID {os.getpid()}\n")
    sampler = Sampler(None, 30.0, glidein=os.getpid(), glidein_config=str(config))
    base = {"service.name": "glidein", "glidein.uuid": "u-7", "glidein.site": "SiteA"}
    sampler.discover()
    early = sampler.sample(now=1.0, force=True)
    config.write_text(f"GLIDEIN_STARTUP_PID {os.getpid()}\nTRACEPARENT 00-{TRACE}-{SPAN}-01\n")
    sampler.discover()
    late = sampler.sample(now=2.0, force=True)
    with TraceStore(str(tmp_path / "store.db")) as store:
        for samples in (early, late):
            store.put_metrics(to_request(to_metrics_data(samples, sampler.subjects_for_export(), base)))
        glideins = store.metric_subjects(glidein="u-7")
        assert len(glideins) == 1, glideins                      # one subject, before and after its trace was known
        assert glideins[0]["trace_id"] == TRACE and glideins[0]["span_id"] == SPAN
        assert glideins[0]["cores"] == os.cpu_count()
        assert [g["glidein"] for g in store.metric_subjects(trace_id=TRACE)] == ["u-7"]
        loads = store.metric_loads()
        assert loads[0]["cores"] == os.cpu_count() and loads[0]["load_points"] == 2


def test_ship_home_sidecar_writes_metrics_blocks_at_stop(tmp_path: Path) -> None:
    err = tmp_path / "glidein.err"
    env = clean_env(GWTRACE_EXPORT="ship-home", GWTRACE_GLIDEIN_PID=str(os.getpid()), GWTRACE_RESOURCE_INTERVAL="1",
                    GWTRACE_STOP_TIMEOUT="2", GWTRACE_HOME=str(tmp_path / "home"))
    start = subprocess.run([GWTRACE, "sidecar", "start", "--dir", str(tmp_path / "gw"),
                            "--ship-to", str(err)], env=env, capture_output=True, text=True, timeout=60)
    assert start.returncode == 0, start.stderr
    deadline = time.monotonic() + 30
    status: Dict[str, str] = {}
    while time.monotonic() < deadline:
        out = subprocess.run([GWTRACE, "sidecar", "status", "--dir", str(tmp_path / "gw")],
                             env=env, capture_output=True, text=True, timeout=30)
        status = dict(line.split(": ", 1) for line in out.stdout.splitlines() if ": " in line)
        if int(status.get("resource_samples", "0")) >= 2:
            break
        time.sleep(0.3)
    stop = subprocess.run([GWTRACE, "sidecar", "stop", "--dir", str(tmp_path / "gw")],
                          env=env, capture_output=True, text=True, timeout=60)
    assert stop.returncode == 0, stop.stderr
    blocks = [b for b in find_blocks(err.read_bytes()) if isinstance(b, Block) and b.kind == "metrics"]
    assert blocks, err.read_text()[:500]
    request = ExportMetricsServiceRequest()
    request.ParseFromString(blocks[0].payload)
    assert count_points(request) == int(blocks[0].meta["points"]) >= 3 * 8      # 2 samples, and the stop's
    attrs = {kv.key: any_value(kv.value) for kv in request.resource_metrics[0].resource.attributes}
    assert attrs["gwtrace.subject"] == "glidein" and attrs["gwtrace.resources.source"] == "proc"


def test_a_glidein_trace_published_after_the_last_round_still_rides_home_with_its_samples(tmp_path: Path) -> None:
    config = tmp_path / "glidein_config"
    config.write_text(f"GLIDEIN_STARTUP_PID {os.getpid()}\n")
    sampler = Sampler(None, 30.0, glidein=os.getpid(), glidein_config=str(config))
    monitor = ResourceMonitor(sampler, Buffer(10_000), lambda: {"glidein.uuid": "u-8"})
    monitor.round(now=100.0, force=True)
    config.write_text(f"GLIDEIN_STARTUP_PID {os.getpid()}\nTRACEPARENT 00-{TRACE}-{SPAN}-01\n")
    assert monitor.close(1.0)                 # the stop's round looks once more
    (request, points), = monitor.leftover_requests()
    attrs = {kv.key: any_value(kv.value) for kv in request.resource_metrics[0].resource.attributes}
    assert attrs["gwtrace.trace_id"] == TRACE and attrs["gwtrace.span_id"] == SPAN and points > 0
