"""Resource samples to OTLP metrics, through opentelemetry-sdk's data model and exporter.

The sidecar samples what the glidein and each job use (``gwtrace.sidecar.resources``);
each sample is a row of values taken at one instant. They become one
``ResourceMetrics`` per subject and source (the glidein, a job; docs/resources.md),
scope ``gwtrace.resources``, with the semantic conventions' metric names:
``process.cpu.time`` (cumulative, ``cpu.mode``), ``process.memory.usage``,
``process.memory.pss``, ``process.memory.peak``, ``process.disk.io`` (cumulative,
``disk.io.direction``), ``process.thread.count``, ``process.count`` and, on the
glidein's, ``system.cpu.load_average.1m`` and ``system.cpu.logical.count``.

Why the SDK's data classes and not its MeterProvider: a reader collects what
instruments in *this* process aggregated, one point per collection and series,
stamped when collected. These values are cumulative totals read from other
processes (``/proc``, cgroups), each stamped when it was read, and several
samples of one series may wait in the buffer for one request (a collector that
was down, a finer interval for a job). So the sidecar builds ``MetricsData``
itself and hands it to the SDK's ``OTLPMetricExporter`` (which encodes it with
``encode_metrics`` and POSTs ``/v1/metrics``); the same encoder gives the
``ExportMetricsServiceRequest`` for the embedded store and the ship-home blocks.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from gwtrace import __version__
from gwtrace.export.otlpenv import OtlpEnv, otlp_env
from gwtrace.wire.metric_points import count_points  # noqa: F401  (re-exported: what a block holds)

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.export import Metric, MetricsData, NumberDataPoint

log = logging.getLogger("gwtrace.export.metrics")

SCOPE_NAME = "gwtrace.resources"


_SDK: Optional[SimpleNamespace] = None


def _sdk() -> SimpleNamespace:
    """The SDK's metrics classes, imported on first use: the sidecar imports this module before its
    main loop starts, and the metrics SDK is not needed until the first sample is sent (a glidein's
    first script runs while the sidecar starts: every 0.1 s of start-up delays its first reading)."""
    global _SDK
    if _SDK is None:
        from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
        from opentelemetry.sdk.metrics.export import (AggregationTemporality, Gauge, Metric, MetricsData,
                                                      NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum)
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope

        _SDK = SimpleNamespace(
            encode_metrics=encode_metrics, CUMULATIVE=AggregationTemporality.CUMULATIVE, Gauge=Gauge,
            Metric=Metric, MetricsData=MetricsData, NumberDataPoint=NumberDataPoint,
            ResourceMetrics=ResourceMetrics, ScopeMetrics=ScopeMetrics, Sum=Sum, Resource=Resource,
            scope=InstrumentationScope(SCOPE_NAME, __version__))
    return _SDK


class ResourceSample(NamedTuple):
    """One subject's usage at one instant (None: not known for this sample)."""

    subject: str                 # the subject's key: "glidein", "job:<trace>-<span>"
    time_ns: int
    source: str                  # "cgroup-v2" | "cgroup-v1" | "proc"
    cpu_user_s: Optional[float]
    cpu_system_s: Optional[float]
    rss: Optional[int]
    pss: Optional[int]
    peak: Optional[int]
    io_read: Optional[int]
    io_write: Optional[int]
    threads: Optional[int]
    procs: Optional[int]
    load1: Optional[float]
    cpus: Optional[int] = None   # the machine's logical CPUs (the glidein's: what its load average is over)

    @property
    def points(self) -> int:
        """How many data points this sample becomes."""
        return sum(1 for v in self[3:] if v is not None)


def _point(value: Any, start_ns: int, time_ns: int, attrs: Optional[Dict[str, str]] = None) -> NumberDataPoint:
    return _sdk().NumberDataPoint(attributes=attrs or {}, start_time_unix_nano=start_ns,
                                  time_unix_nano=time_ns, value=value)


def _sum(name: str, unit: str, description: str, points: List[NumberDataPoint], monotonic: bool = True) -> Metric:
    sdk = _sdk()
    return sdk.Metric(name=name, description=description, unit=unit,
                      data=sdk.Sum(data_points=points, aggregation_temporality=sdk.CUMULATIVE,
                                   is_monotonic=monotonic))


def _gauge(name: str, unit: str, description: str, points: List[NumberDataPoint]) -> Metric:
    sdk = _sdk()
    return sdk.Metric(name=name, description=description, unit=unit, data=sdk.Gauge(data_points=points))


def _metrics(samples: Sequence[ResourceSample], start_ns: int) -> List[Metric]:
    """The metrics of one subject's samples (same source), in the conventions' names and units."""
    cpu: List[NumberDataPoint] = []
    io: List[NumberDataPoint] = []
    gauges: Dict[str, List[NumberDataPoint]] = {}
    for s in samples:
        t = s.time_ns
        if s.cpu_user_s is not None:
            cpu.append(_point(s.cpu_user_s, start_ns, t, {"cpu.mode": "user"}))
        if s.cpu_system_s is not None:
            cpu.append(_point(s.cpu_system_s, start_ns, t, {"cpu.mode": "system"}))
        if s.io_read is not None:
            io.append(_point(s.io_read, start_ns, t, {"disk.io.direction": "read"}))
        if s.io_write is not None:
            io.append(_point(s.io_write, start_ns, t, {"disk.io.direction": "write"}))
        for name, value in (("process.memory.usage", s.rss), ("process.memory.pss", s.pss),
                            ("process.memory.peak", s.peak), ("process.thread.count", s.threads),
                            ("process.count", s.procs), ("system.cpu.load_average.1m", s.load1),
                            ("system.cpu.logical.count", s.cpus)):
            if value is not None:
                gauges.setdefault(name, []).append(_point(value, start_ns, t))
    out = []
    if cpu:
        out.append(_sum("process.cpu.time", "s", "CPU time of the process tree (or cgroup)", cpu))
    described = {
        "process.memory.usage": ("By", "resident memory (RSS summed over the tree, or the cgroup's current memory)"),
        "process.memory.pss": ("By", "proportional set size summed over the tree"),
        "process.memory.peak": ("By", "the cgroup's peak memory, else the highest RSS sampled"),
        "process.thread.count": ("{thread}", "threads"),
        "process.count": ("{process}", "processes"),
        "system.cpu.load_average.1m": ("{run_queue_item}", "the node's 1-minute load average"),
    }
    for name, (unit, description) in described.items():
        if name in gauges:
            out.append(_gauge(name, unit, description, gauges[name]))
    if "system.cpu.logical.count" in gauges:      # an UpDownCounter in the conventions: a non-monotonic sum
        out.append(_sum("system.cpu.logical.count", "{cpu}", "the machine's logical CPUs (what the load is over)",
                        gauges["system.cpu.logical.count"], monotonic=False))
    if io:
        out.append(_sum("process.disk.io", "By", "bytes read from and written to storage", io))
    return out


class Subject(NamedTuple):
    """What the encoder needs of a sampled subject: its resource attributes and series start."""

    attributes: Mapping[str, Any]      # the subject's own (gwtrace.subject, condor.job.id, ...)
    start_ns: int                      # when its cumulative series began (its process's start)


def to_metrics_data(samples: Sequence[ResourceSample], subjects: Mapping[str, Subject],
                    base: Mapping[str, Any]) -> MetricsData:
    """One ResourceMetrics per (subject, source): ``base`` (the sidecar's resource attributes) with the
    subject's and ``gwtrace.resources.source``. A sample of a subject not in ``subjects`` is skipped."""
    groups: Dict[Tuple[str, str], List[ResourceSample]] = {}
    for s in samples:
        if s.subject in subjects:
            groups.setdefault((s.subject, s.source), []).append(s)
    sdk = _sdk()
    resource_metrics = []
    for (key, source), group in groups.items():
        subject = subjects[key]
        attrs = dict(base)
        attrs.update(subject.attributes)
        attrs["gwtrace.resources.source"] = source
        resource_metrics.append(sdk.ResourceMetrics(
            resource=sdk.Resource(attrs), schema_url="",
            scope_metrics=[sdk.ScopeMetrics(scope=sdk.scope, metrics=_metrics(group, subject.start_ns),
                                            schema_url="")]))
    return sdk.MetricsData(resource_metrics=resource_metrics)


def to_request(data: MetricsData) -> Any:
    """The ``ExportMetricsServiceRequest`` of ``data`` (for the store and the ship-home blocks)."""
    return _sdk().encode_metrics(data)


class MetricsOutcome(NamedTuple):
    delivered: bool
    retryable: bool = True
    message: str = ""


class OtlpMetricsSender:
    """The SDK's ``OTLPMetricExporter`` with the spans' settings (headers, token, gzip, CA, time-out:
    ``otlpenv``), and what a failure was (the session records the last HTTP status)."""

    def __init__(self, endpoint: str, settings: Optional[OtlpEnv] = None) -> None:
        from opentelemetry.exporter.otlp.proto.http import Compression
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

        from gwtrace.export.reachability import RecordingSession

        settings = settings or otlp_env()
        self.endpoint = endpoint
        self.session = RecordingSession()
        self.exporter = OTLPMetricExporter(
            endpoint=endpoint, certificate_file=settings.certificate,
            client_key_file=settings.client_key, client_certificate_file=settings.client_certificate,
            headers=settings.headers, timeout=settings.timeout_s, session=self.session,
            compression=Compression.Gzip if settings.compression == "gzip" else Compression.NoCompression)
        for name in ("opentelemetry.exporter.otlp.proto.http", "opentelemetry.exporter.otlp.common"):
            logging.getLogger(name).setLevel(logging.CRITICAL)

    def send(self, data: MetricsData) -> MetricsOutcome:
        from opentelemetry.sdk.metrics.export import MetricExportResult

        self.session.last_status = None
        self.session.last_error = None
        try:
            result = self.exporter.export(data)
        except Exception as exc:  # noqa: BLE001 - an exporter failure must not stop the sampler
            return MetricsOutcome(False, True, f"{type(exc).__name__}: {exc}")
        if result == MetricExportResult.SUCCESS:
            return MetricsOutcome(True)
        status = self.session.last_status
        if status is None:
            error = self.session.last_error
            return MetricsOutcome(False, True, str(error) if error is not None else "no answer")
        if 400 <= status < 500 and status != 429:
            return MetricsOutcome(False, False, f"HTTP {status}")
        return MetricsOutcome(False, True, f"HTTP {status}")

    def shutdown(self) -> None:
        try:
            self.exporter.shutdown()
        except Exception:  # noqa: BLE001
            pass
