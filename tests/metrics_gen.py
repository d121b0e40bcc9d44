"""OTLP metrics requests as the contract between the sidecar and the factory says (docs/resources.md), built
from series in the tests: ``request([subject(...)])``.

Made here rather than by the sidecar's sampler so that the factory side's tests stand on the contract alone.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.metrics.v1 import metrics_pb2
from synthetic import set_attr

MB = 1 << 20
T0 = 1_760_000_000 * 10**9          # 2025-10-09: a sample time well inside any retention test's window


def _add_attrs(kvs: Any, attrs: Dict[str, Any]) -> None:
    """``attrs`` as KeyValues (``synthetic.set_attr``'s typing); anything but a bool or a number as its text."""
    for key, value in attrs.items():
        set_attr(kvs, key, value if isinstance(value, (bool, int, float)) else str(value))


def resource(kind: str = "job", *, glidein: str = "g-1", job_id: Optional[str] = "123.0", owner: str = "alice",
             site: str = "SiteA", entry: str = "EntryA", trace_id: Optional[str] = None, span_id: Optional[str] = None,
             request_cpus: Optional[float] = 1, request_memory_mb: Optional[float] = 2000,
             source: str = "proc", extra: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """A subject's resource attributes as the contract names them."""
    attrs: Dict[str, Any] = {"service.name": "glidein", "glidein.uuid": glidein, "glidein.site": site,
                             "glidein.entry": entry, "host.name": "wn1.example.org", "gwtrace.subject": kind,
                             "gwtrace.resources.source": source}
    if kind == "job":
        attrs["condor.job.id"] = job_id
        attrs["condor.job.owner"] = owner
        if trace_id:
            attrs["gwtrace.trace_id"] = trace_id
        if span_id:
            attrs["gwtrace.span_id"] = span_id
        if request_cpus is not None:
            attrs["job.request_cpus"] = request_cpus
        if request_memory_mb is not None:
            attrs["job.request_memory_mb"] = request_memory_mb
    attrs.update(extra or {})
    return attrs


Point = Tuple[int, float]


def series_of(times_s: Sequence[float], values: Sequence[float], t0: int = T0) -> List[Point]:
    """(time ns, value) points at ``t0`` + each time in seconds."""
    return [(t0 + int(t * 1e9), v) for t, v in zip(times_s, values)]


def add_metric(scope: Any, name: str, points: Iterable[Point], *, kind: str = "gauge", unit: str = "",
               attributes: Optional[Dict[str, Any]] = None, monotonic: bool = True) -> None:
    metric = scope.metrics.add(name=name, unit=unit)
    data = metric.gauge if kind == "gauge" else metric.sum
    if kind == "sum":
        data.aggregation_temporality = metrics_pb2.AGGREGATION_TEMPORALITY_CUMULATIVE
        data.is_monotonic = monotonic
    for t, v in points:
        point = data.data_points.add(time_unix_nano=t)
        if isinstance(v, int) and not isinstance(v, bool):
            point.as_int = v
        else:
            point.as_double = v
        _add_attrs(point.attributes, attributes or {})


def subject(attrs: Dict[str, Any], *, rss: Iterable[Point] = (), peak: Iterable[Point] = (),
            cpu_user: Iterable[Point] = (), cpu_system: Iterable[Point] = (), load: Iterable[Point] = (),
            cores: Optional[int] = None,
            other: Sequence[Tuple[str, Iterable[Point]]] = ()) -> metrics_pb2.ResourceMetrics:
    """One ResourceMetrics with the given series (RSS and peak in bytes, CPU in cumulative seconds); ``cores``:
    the machine's logical CPUs, sent with each load sample as the sidecar does (``system.cpu.logical.count``)."""
    rm = metrics_pb2.ResourceMetrics()
    _add_attrs(rm.resource.attributes, attrs)
    scope = rm.scope_metrics.add()
    scope.scope.name = "gwtrace.resources"
    if cpu_user:
        add_metric(scope, "process.cpu.time", cpu_user, kind="sum", unit="s", attributes={"cpu.mode": "user"})
    if cpu_system:
        add_metric(scope, "process.cpu.time", cpu_system, kind="sum", unit="s", attributes={"cpu.mode": "system"})
    if rss:
        add_metric(scope, "process.memory.usage", rss, unit="By")
    if peak:
        add_metric(scope, "process.memory.peak", peak, unit="By")
    if load:
        load = list(load)
        add_metric(scope, "system.cpu.load_average.1m", load, unit="{run_queue_item}")
        if cores is not None:
            add_metric(scope, "system.cpu.logical.count", [(t, cores) for t, _ in load], kind="sum", unit="{cpu}",
                       monotonic=False)
    for name, points in other:
        add_metric(scope, name, points)
    return rm


def request(subjects: Iterable[metrics_pb2.ResourceMetrics]) -> ExportMetricsServiceRequest:
    req = ExportMetricsServiceRequest()
    for rm in subjects:
        req.resource_metrics.append(rm)
    return req


def leaking_job(trace_id: Optional[str] = None, *, job_id: str = "200.0", n: int = 20, step_s: float = 30,
                start_mb: float = 500, mb_per_step: float = 60, request_memory_mb: float = 2000,
                **kw: Any) -> metrics_pb2.ResourceMetrics:
    """A job whose RSS grows by ``mb_per_step`` every sample (a leak), one core busy."""
    times = [i * step_s for i in range(n)]
    return subject(resource(job_id=job_id, trace_id=trace_id, request_memory_mb=request_memory_mb, **kw),
                   rss=series_of(times, [int((start_mb + mb_per_step * i) * MB) for i in range(n)]),
                   cpu_user=series_of(times, [0.95 * t for t in times]))


def flat_job(trace_id: Optional[str] = None, *, job_id: str = "201.0", n: int = 20, step_s: float = 30,
             mb: float = 800, cores: float = 1.0, request_cpus: float = 1, **kw: Any) -> metrics_pb2.ResourceMetrics:
    """A job with steady RSS (a little noise) using ``cores`` cores."""
    times = [i * step_s for i in range(n)]
    wobble = [(-1) ** i * 3 for i in range(n)]
    return subject(resource(job_id=job_id, trace_id=trace_id, request_cpus=request_cpus, **kw),
                   rss=series_of(times, [int((mb + w) * MB) for w in wobble]),
                   cpu_user=series_of(times, [cores * t for t in times]))
