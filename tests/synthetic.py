"""Synthetic glidein traces, as OTLP messages, for bench/serve and the store, server and UI tests.

Test data, so it lives under tests/ and ships in neither the wheel nor the pyz.

The shape follows a real glidein (``glidein_startup.sh``): a root span, the
validation/setup scripts in the factory's order, ``condor_startup.sh`` with
the HTCondor daemons under it, and user jobs run through the job wrapper.
Attribute names follow the ones gwtrace emits (``glidein.*`` on the
resource, ``process.*`` on script spans).  Built with the official
``opentelemetry.proto`` messages so that what the server stores is exactly
what an exporter would send.
"""

from __future__ import annotations

import random
from typing import Dict, Iterator, List, Optional, Sequence, Union

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, Span, Status

Value = Union[str, int, float, bool, List[str]]

#: Scripts run before HTCondor starts, in glidein_startup.sh's order.
VALIDATION_SCRIPTS = (
    ("main", "setup_script.sh"), ("main", "cat_consts.sh"), ("main", "condor_platform_select.sh"),
    ("main", "singularity_wrapper.sh"), ("main", "collector_setup.sh"), ("main", "create_temp_mapfile.sh"),
    ("main", "setup_x509.sh"), ("main", "check_wn_drainstate.sh"), ("main", "mjf_setparams.sh"),
    ("client", "cat_consts.sh"), ("client", "check_blacklist.sh"), ("entry", "cat_consts.sh"),
    ("main", "cvmfs_setup.sh"), ("main", "singularity_setup.sh"), ("main", "check_proxy.sh"),
    ("main", "create_mapfile.sh"), ("main", "validate_node.sh"), ("main", "setup_network.sh"),
    ("main", "java_setup.sh"), ("main", "glidein_memory_setup.sh"), ("main", "glidein_cpus_setup.sh"),
    ("main", "glidein_sitewms_setup.sh"), ("main", "script_wrapper.sh"), ("main", "smart_partitionable.sh"),
)
SITES = ("CERN", "FNAL", "UCSD", "Nebraska", "Wisconsin", "Purdue", "MIT", "Caltech")
SCOPE = "gwtrace"
SECOND = 1_000_000_000


def set_attr(kvs: "Sequence[KeyValue]", key: str, value: Value) -> None:
    kv = kvs.add()  # type: ignore[attr-defined]
    kv.key = key
    if isinstance(value, bool):
        kv.value.bool_value = value
    elif isinstance(value, int):
        kv.value.int_value = value
    elif isinstance(value, float):
        kv.value.double_value = value
    elif isinstance(value, list):
        for item in value:
            kv.value.array_value.values.add().string_value = item
    else:
        kv.value.string_value = value


def glidein_resource(rs: ResourceSpans, uuid: str, site: str, entry: str, cluster: int) -> None:
    attrs: Dict[str, Value] = {
        "service.name": "glidein",
        "service.instance.id": uuid,
        "glidein.uuid": uuid,
        "glidein.site": site,
        "glidein.entry": entry,
        "glidein.factory": "OSG",
        "glidein.name": "gfactory_instance",
        "glidein.client": "frontend.main",
        "glidein.schedd": "schedd_glideins2@factory.example.org",
        "glidein.cluster_id": cluster,
        "glidein.proc_id": 0,
        "glidein.cpus": 8,
        "host.name": f"wn{cluster % 997:03d}.{site.lower()}.example.org",
    }
    for key, value in attrs.items():
        set_attr(rs.resource.attributes, key, value)


class _Spans:
    """Adds spans to one ScopeSpans with fresh ids from a seeded generator."""

    def __init__(self, rng: random.Random, scope_spans, trace_id: bytes):
        self.rng, self.ss, self.trace_id = rng, scope_spans, trace_id

    def add(self, name: str, parent: Optional[Span], start: int, end: int, status: int = Status.STATUS_CODE_UNSET,
            kind: int = Span.SPAN_KIND_INTERNAL, **attrs: Value) -> Span:
        s = self.ss.spans.add()
        s.trace_id = self.trace_id
        s.span_id = (self.rng.getrandbits(64) | 1).to_bytes(8, "big")  # never all zero
        if parent is not None:
            s.parent_span_id = parent.span_id
        s.name, s.kind = name, kind
        s.start_time_unix_nano, s.end_time_unix_nano = start, end
        s.status.code = status
        if status == Status.STATUS_CODE_ERROR:
            s.status.message = f"{name} failed"
        for key, value in attrs.items():
            set_attr(s.attributes, key.replace("__", "."), value)
        return s


def glidein_trace(
    rng: random.Random,
    start_ns: int,
    *,
    n_jobs: int = 3,
    extra_spans: int = 0,
    fail: bool = False,
    uuid: Optional[str] = None,
    site: Optional[str] = None,
    hostile: bool = False,
) -> ExportTraceServiceRequest:
    """One glidein's trace.

    ``extra_spans`` adds that many periodic-script runs (to reach a given
    size); ``fail`` makes validate_node.sh fail; ``hostile`` puts markup in a
    span name, attribute and event, to check that the UI escapes them.
    """
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    uuid = uuid or "%08x-%04x-4%03x-a%03x-%012x" % (
        rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(12), rng.getrandbits(12), rng.getrandbits(48))
    site = site or rng.choice(SITES)
    cluster = rng.randrange(100_000, 999_999)
    glidein_resource(rs, uuid, site, f"OSG_{site}_ce1", cluster)
    ss = rs.scope_spans.add()
    ss.scope.name = SCOPE
    ss.scope.version = "0.1.0"
    trace_id = rng.getrandbits(128).to_bytes(16, "big")
    spans = _Spans(rng, ss, trace_id)

    t = start_ns
    root = spans.add("glidein_startup.sh", None, start_ns, 0, **{"process.pid": rng.randrange(1000, 60000)})
    for gs_id, script in VALIDATION_SCRIPTS:
        dur = int(rng.uniform(0.05, 2.0) * SECOND)
        failed = fail and script == "validate_node.sh"
        s = spans.add(
            script, root, t, t + dur, Status.STATUS_CODE_ERROR if failed else Status.STATUS_CODE_OK,
            **{"process.executable.name": script, "process.exit_code": 1 if failed else 0,
               "gwms.script.id": gs_id, "gwms.script.type": "exec", "gwms.script.period": 0},
        )
        if failed:
            e = s.events.add()
            e.name, e.time_unix_nano = "exception", t + dur - 1000
            set_attr(e.attributes, "exception.message", "node validation failed: /tmp not writable")
        t += dur + int(rng.uniform(0.01, 0.2) * SECOND)
        if failed:
            root.end_time_unix_nano = t
            root.status.code = Status.STATUS_CODE_ERROR
            root.status.message = "validation failed in validate_node.sh"
            return req

    condor = spans.add("condor_startup.sh", root, t, 0, **{"process.executable.name": "condor_startup.sh"})
    master = spans.add("condor_master", condor, t + 2 * SECOND, 0, **{"condor.daemon": "master"})
    jt = t + 20 * SECOND
    for j in range(n_jobs):
        dur = int(rng.uniform(60, 1800) * SECOND)
        spans.add(
            "condor_job_wrapper.sh", master, jt, jt + dur, Status.STATUS_CODE_OK,
            **{"condor.job.id": f"{rng.randrange(1000, 99999)}.{j}", "condor.job.owner": "fermilab",
               "process.exit_code": 0},
        )
        jt += dur + int(rng.uniform(1, 30) * SECOND)
    for k in range(extra_spans):
        pt = t + k * SECOND // 10
        spans.add("check_wn_drainstate.sh", master, pt, pt + int(rng.uniform(0.001, 0.05) * SECOND),
                  Status.STATUS_CODE_OK, **{"process.executable.name": "check_wn_drainstate.sh",
                                            "gwms.script.period": 60, "process.exit_code": 0,
                                            "gwms.script.id": "main", "glidein.periodic": True})
    end = max(jt, t + (extra_spans + 1) * SECOND // 10) + 5 * SECOND
    master.end_time_unix_nano = end - 2 * SECOND
    master.status.code = Status.STATUS_CODE_OK
    condor.end_time_unix_nano = end - SECOND
    condor.status.code = Status.STATUS_CODE_OK
    if hostile:
        h = spans.add('<script>window.__gwtraceXss = 1</script>', root, end - SECOND, end - SECOND // 2,
                      Status.STATUS_CODE_ERROR, **{"payload": '<img src=x onerror="window.__gwtraceXss = 2">'})
        e = h.events.add()
        e.name, e.time_unix_nano = '<img src=y onerror="window.__gwtraceXss = 3">', end - SECOND + 1000
        set_attr(e.attributes, "detail", "</td><script>window.__gwtraceXss = 4</script>")
    root.end_time_unix_nano = end
    root.status.code = Status.STATUS_CODE_OK
    return req


def split(request: ExportTraceServiceRequest, batch_size: int) -> Iterator[ExportTraceServiceRequest]:
    """Re-batch a request's spans into requests of at most ``batch_size`` spans (same resource/scope)."""
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            spans = list(ss.spans)
            for i in range(0, len(spans), batch_size):
                out = ExportTraceServiceRequest()
                ors = out.resource_spans.add()
                ors.resource.CopyFrom(rs.resource)
                ors.schema_url = rs.schema_url
                oss = ors.scope_spans.add()
                oss.scope.CopyFrom(ss.scope)
                oss.spans.extend(spans[i:i + batch_size])
                yield out


def span_count(request: ExportTraceServiceRequest) -> int:
    return sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)


def trace_ids(request: ExportTraceServiceRequest) -> List[str]:
    return sorted({s.trace_id.hex() for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans})
