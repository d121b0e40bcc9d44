"""A glidein record as a trace: deterministic ids, spans, event lines.

Ids are derived from what identifies a glidein — factory, schedd, Condor-G
``cluster.proc`` and, once known, its ``GLIDEIN_UUID`` — so ingesting the same
files twice gives the same spans (the store keeps one copy) and a glidein that
also ran gwtrace joins the same trace: its set-up computes
``glidein_trace_id`` from the same values and gives its steps the span ids
``script_span_key`` names (docs/accounting.md gives the derivation for other
languages). The uuid is what tells apart two glideins that share the rest
(a resubmission after a schedd reset, test factories); a glidein seen only in
the Condor-G logs has none yet and gets the uuid-less id until its ``.out`` is
read (the store then replaces what it kept under that id).
"""

import hashlib
from typing import Any, Dict, List, Optional

from gwtrace.wire.span import SpanRecord
from .record import GlideinRecord

ID_DOMAIN = b"gwtrace-glidein-v1"
#: ``gwtrace.source`` of every span (and resource) made from the factory's files; live spans have none
BACKFILLED = "factory-logs"


def glidein_trace_id(factory: Optional[str], schedd: Optional[str], cluster: Any, proc: Any,
                     uuid: Optional[str] = None) -> str:
    """32 hex digits: sha256("gwtrace-glidein-v1\\0factory\\0schedd\\0cluster.proc[\\0uuid]")[:32].

    ``uuid`` (GlideinWMS's ``GLIDEIN_UUID``) is appended when known: without it, the id of a glidein
    known only by its Condor-G job (never ran, or its ``.out`` not read yet).
    """
    parts = [ID_DOMAIN, (factory or "").encode(), (schedd or "").encode(), f"{cluster}.{proc}".encode()]
    if uuid:
        parts.append(str(uuid).encode())
    return hashlib.sha256(b"\0".join(parts)).hexdigest()[:32]


def script_span_key(index: int, script_id: str) -> str:
    """The span key of a glidein step: ``script/<index>/<id>``, index = 0-based position of its
    ``OSGTestResult`` in the glidein's result list, id = its ``id`` (``main/cat_consts.sh``). The live
    node derives the same key, so its span of a step and the backfilled one are one span."""
    return f"script/{index}/{script_id}"


def is_condor_startup(script_id: str) -> bool:
    """Whether a step is HTCondor's start-up (``condor_startup.sh``, also as ``main/condor_startup.sh``)."""
    return script_id == "condor_startup.sh" or script_id.endswith("/condor_startup.sh")


def span_id(trace_id: str, name: str) -> str:
    """16 hex digits, stable per (trace, span key), never all zero."""
    value = hashlib.sha256(f"{trace_id}/{name}".encode()).hexdigest()[:16]
    return value if value.strip("0") else "0000000000000001"


def resource_attributes(rec: GlideinRecord) -> Dict[str, Any]:
    """Resource attributes named as ``gwtrace.export.resource`` names them for live glideins."""
    pairs = {
        "service.name": "glidein",
        "gwtrace.source": BACKFILLED,   # the store tells live glideins' resources from these (store/glideins.py)
        "glidein.uuid": rec.glidein_uuid,
        "glidein.site": rec.site,
        "glidein.entry": rec.entry,
        "glidein.factory": rec.factory,
        "glidein.client": rec.frontend,
        "glidein.schedd": rec.schedd,
        "glidein.cluster_id": rec.cluster,
        "glidein.proc_id": rec.proc,
        "glidein.cpus": rec.cpus,
        "glidein.memory_mb": rec.memory_mb,
        "glidein.gpus": rec.gpus,
    }
    return {k: v for k, v in pairs.items() if v is not None}


class _Builder:
    """Collects the spans of one glidein under its root."""

    def __init__(self, rec: GlideinRecord, trace_id: Optional[str] = None) -> None:
        self.trace_id = trace_id or glidein_trace_id(rec.factory, rec.schedd, rec.cluster, rec.proc, rec.glidein_uuid)
        self.spans: List[SpanRecord] = []

    def add(self, key: str, name: str, start: Optional[int], end: Optional[int], parent: str = "",
            status: str = "unset", **attributes: Any) -> Optional[SpanRecord]:
        if start is None or end is None:
            return None
        span = SpanRecord(trace_id=self.trace_id, span_id=span_id(self.trace_id, key), parent_id=parent,
                          parent_remote=False, flags=1, tracestate="", name=name, start_us=int(start) * 1000000,
                          pid=0, end_us=max(int(end), int(start)) * 1000000, status=status,
                          attributes={k: v for k, v in attributes.items() if v is not None})
        span.attributes["gwtrace.source"] = BACKFILLED
        self.spans.append(span)
        return span


def _status(text: Optional[str]) -> str:
    return {"OK": "ok", "ERROR": "error"}.get(text or "", "unset")


def record_to_spans(rec: GlideinRecord, trace_id: Optional[str] = None) -> List[SpanRecord]:
    """The glidein's spans: root, Condor-G queue, per-script timeline, HTCondor, user jobs.

    ``trace_id``: the trace to put them in when not the one the record's identity gives (the store
    folds a glidein known by its Condor-G job only into the trace of the same glidein that ran).
    HTCondor's ``condor`` span is a child of the ``condor_startup.sh`` step when the glidein ran it.
    """
    build = _Builder(rec, trace_id)
    start = rec.submitted if rec.submitted is not None else rec.started
    root = build.add("glidein", "glidein", start, rec.ended, status=_status(rec.status),
                     **{"glidein.failed_script": rec.failed_script, "glidein.incomplete": rec.incomplete,
                        "glidein.incomplete_reasons": "; ".join(rec.incomplete_reasons) or None})
    if root is None:
        return []
    for hold in rec.holds:
        root.events.append(("held", int(hold["time"]) * 1000000, {"hold.reason": hold["reason"],
                                                                  "hold.code": hold["code"] or 0}))
    parent = root.span_id
    queued = build.add("queued", "condorg.queued", rec.submitted, rec.started, parent)
    if queued is not None and rec.ce_submitted is not None:
        build.add("queued/factory", "factory.queue", rec.submitted, rec.ce_submitted, queued.span_id)
        build.add("queued/ce", "ce.queue", rec.ce_submitted, rec.started, queued.span_id)
    condor_parent = parent
    for index, script in enumerate(rec.scripts):
        key = script_span_key(index, script.id)
        step = build.add(key, script.id, script.start, script.end, parent,
                         _status(script.status), **{"glidein.script": script.id})
        if step is not None and script.status == "ERROR" and script.detail:
            step.status_message = script.detail[:300]
        if is_condor_startup(script.id):
            condor_parent = span_id(build.trace_id, key)
    condor = build.add("condor", "condor", rec.condor_start, rec.condor_end, condor_parent)
    job_parent = condor.span_id if condor is not None else parent
    for index, job in enumerate(rec.jobs):
        failed = job.exit_signal is not None or bool(job.exit_code)
        build.add(f"job/{index}/{job.job_id}", "job", job.start, job.end, job_parent,
                  "error" if failed else "unset",
                  **{"condor.job_id": job.job_id, "process.exit.code": job.exit_code,
                     "condor.exit_signal": job.exit_signal, "condor.request_cpus": job.cpus,
                     "condor.preempted": job.preempted})
    return build.spans
