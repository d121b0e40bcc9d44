"""A job's state as spans, with ids every party can compute.

Ids (docs/journey.md): the trace is the one of the job ad's ``TraceParent``
(jobsub sets it) when there is one, else ``sha256("gwtrace-job-v1\\0" +
schedd + "\\0" + cluster.proc + "\\0" + submit time)[:32]``, fixed the
first time the job is seen.  Every span id is ``span_id(trace, key)`` of
``factory.to_trace`` (``sha256(trace + "/" + key)[:16]``), the keys being
``job/C.P`` (the job), ``job/C.P/idle/I``, ``job/C.P/held/I``,
``job/C.P/run/N`` (the N-th execution, N from 1) and children of a run.
So a second ingest gives the same spans (the store keeps one copy), and the
job wrapper on the worker node, which knows the trace (TraceParent),
cluster, proc and N (the ad's ``NumShadowStarts``), computes the id of
"executing" and makes its own span a child of it.
"""

import hashlib
from typing import Any, Callable, Dict, List, Optional, Tuple

from opentelemetry.trace import Link, SpanContext, TraceFlags

from gwtrace.factory.to_trace import glidein_trace_id, span_id
from gwtrace.wire import traceparent
from gwtrace.wire.span import SpanRecord
from .holds import explain

US = 1000000
_FAILED_RUN = ("evicted", "held", "shadow exception", "reconnect failed", "aborted")


def job_trace_id(schedd: str, cluster: int, proc: int, submitted: Optional[int]) -> str:
    """The trace of a job without TraceParent (32 hex digits)."""
    key = "\0".join(["gwtrace-job-v1", schedd or "", f"{cluster}.{proc}", "" if submitted is None else str(submitted)])
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def assign_trace(state: Dict[str, Any]) -> str:
    """The job's trace id: its TraceParent's when known (it wins even over an id chosen earlier), else fixed
    at first sight."""
    parent = traceparent.parse(state["ad"].get("TraceParent"))    # ad readers unquote strings
    if parent is not None:
        state["trace_id"], state["parent_span_id"] = parent.trace_id, parent.span_id
    elif not state.get("trace_id"):
        state["trace_id"] = job_trace_id(state["schedd"], state["cluster"], state["proc"], state["submitted"])
        state["parent_span_id"] = ""
    return state["trace_id"]


def run_span_id(trace_id: str, cluster: int, proc: int, run: int) -> str:
    """The "executing" span of the job's ``run``-th execution: the job wrapper's parent."""
    return span_id(trace_id, f"job/{cluster}.{proc}/run/{run}")


class _Spans:
    """Collects one job's spans."""

    def __init__(self, state: Dict[str, Any]) -> None:
        self.state = state
        self.trace_id = assign_trace(state)
        self.prefix = f"job/{state['cluster']}.{state['proc']}"
        self.last = state["last"] or state["submitted"] or 0
        self.out: List[Tuple[SpanRecord, List[Link]]] = []

    def add(self, key: str, name: str, start: int, end: Optional[int], parent: str, remote: bool = False,
            status: str = "unset", **attrs: Any) -> SpanRecord:
        opened = end is None
        stop = max(self.last if opened else end, start)
        attributes = {k: v for k, v in attrs.items() if v is not None and v != ""}
        attributes["gwtrace.source"] = "condor-log"
        if opened:
            attributes["gwtrace.open"] = True
        span = SpanRecord(trace_id=self.trace_id, span_id=span_id(self.trace_id, key), parent_id=parent,
                          parent_remote=remote, flags=1, tracestate="", name=name, start_us=start * US, pid=0,
                          end_us=stop * US, status=status, attributes=attributes)
        self.out.append((span, []))
        return span


#: (factory, schedd, cluster, proc, when) -> the trace id of the stored glidein of that Condor-G job, or None
Resolve = Callable[[Any, Any, Any, Any, Optional[int]], Optional[str]]


def _glidein_link(ad: Dict[str, Any], run: Dict[str, Any],
                  resolve: Optional[Resolve] = None) -> Tuple[Dict[str, Any], Optional[Link]]:
    """Glidein attributes for a run, and a link to the glidein's trace when the ad names its Condor-G job
    (the frontend's ``MATCH_EXP_JOB_GLIDEIN_*``: factory, schedd, cluster, proc). The ad does not name the
    glidein's uuid, part of its trace id: ``resolve`` finds the stored glidein of that job running then;
    without one (not stored yet), the link is the job's uuid-less id (``gwtrace job`` resolves it again
    when shown)."""
    g = "MATCH_EXP_JOB_GLIDEIN_"
    attrs = {"glidein.name": run["glidein"].get("name"), "host.name": run["glidein"].get("host"),
             "glidein.site": ad.get(g + "Site"), "glidein.entry": ad.get(g + "Entry_Name"),
             "glidein.factory": ad.get(g + "Factory"), "glidein.schedd": ad.get(g + "Schedd"),
             "glidein.cluster_id": ad.get(g + "ClusterId"), "glidein.proc_id": ad.get(g + "ProcId")}
    link = None
    if attrs["glidein.cluster_id"] not in (None, "", "Unknown") and attrs["glidein.schedd"]:
        proc = attrs["glidein.proc_id"] if attrs["glidein.proc_id"] is not None else 0
        trace = (resolve(attrs["glidein.factory"], attrs["glidein.schedd"], attrs["glidein.cluster_id"], proc,
                         run.get("start")) if resolve is not None else None) \
            or glidein_trace_id(attrs["glidein.factory"], attrs["glidein.schedd"], attrs["glidein.cluster_id"], proc)
        attrs["glidein.trace_id"] = trace
        context = SpanContext(int(trace, 16), int(span_id(trace, "glidein"), 16), True, TraceFlags(1))
        link = Link(context, {"gwtrace.link": "glidein that ran the job"})
    return {k: v for k, v in attrs.items() if v not in (None, "", "Unknown")}, link


def _run_spans(b: _Spans, root: str, run: Dict[str, Any], glidein: Dict[str, Any], link: Optional[Link]) -> None:
    key = f"{b.prefix}/run/{run['n']}"
    failed = run["end_reason"] in _FAILED_RUN
    # the run begins with its input transfer (HTCondor logs 040 before 001): its span covers the transfer
    begins = [t[1] if t[1] is not None else t[2] for t in run["transfers"]]
    start = min([t for t in begins if t is not None] + [run["start"]])
    span = b.add(key, "executing", start, run["end"], root, status="error" if failed else "unset",
                 **{"htcondor.run": run["n"], "htcondor.slot": run["slot"], "htcondor.execute_host": run["host"],
                    "htcondor.run.end_reason": run["end_reason"], "htcondor.memory_usage_mb": run["memory_mb"]},
                 **glidein)
    if link is not None:
        b.out[-1][1].append(link)
    if run["end_reason"] == "evicted":
        span.events.append(("evicted", run["end"] * US, {}))
    for i, (start, end, reason) in enumerate(run["disconnects"]):
        b.add(f"{key}/disconnected/{i}", "disconnected", start, end, span.span_id,
              **{"htcondor.disconnect_reason": reason})
    for i, (direction, queued, start, end) in enumerate(run["transfers"]):
        begin = queued if queued is not None else start
        if begin is None:
            continue
        b.add(f"{key}/transfer/{i}", f"transfer {direction}", begin, end, span.span_id,
              **{"htcondor.transfer.direction": direction,
                 "htcondor.transfer.queued_s": (start - queued) if queued is not None and start is not None else None})


def _root_status(state: Dict[str, Any]) -> str:
    exit_ = state["exit"] or {}
    if state["aborted"] is not None or "signal" in exit_ or exit_.get("code"):
        return "error"
    return "ok" if state["status"] == "completed" else "unset"


def state_to_spans(state: Dict[str, Any], resolve: Optional[Resolve] = None) -> List[Tuple[SpanRecord, List[Link]]]:
    """The job's spans (each with its links): job, idle, held, executing (+ disconnected, transfers);
    ``resolve``: as ``_glidein_link``'s."""
    b = _Spans(state)
    starts = [t for t in [state["submitted"]] + [i[0] for i in state["idle"]] + [h[0] for h in state["holds"]]
              + [r["start"] for r in state["runs"]] if t is not None]
    if not starts:
        return []
    ad, exit_ = state["ad"], state["exit"] or {}
    root = b.add(b.prefix, "htcondor.job", min(starts), state["ended"], state.get("parent_span_id") or "",
                 remote=bool(state.get("parent_span_id")), status=_root_status(state),
                 **{"htcondor.job.id": f"{state['cluster']}.{state['proc']}", "htcondor.schedd": state["schedd"],
                    "htcondor.job.owner": state.get("owner"), "htcondor.job.global_id": ad.get("GlobalJobId"),
                    "htcondor.job.status": state["status"], "process.exit.code": exit_.get("code"),
                    "htcondor.exit_signal": exit_.get("signal"), "htcondor.aborted_reason": state["aborted"],
                    "htcondor.runs": len(state["runs"]), "htcondor.holds": len(state["holds"]),
                    "gwtrace.kind": "htcondor-job"})
    if state["submitted"] is not None:
        root.events.append(("submitted", state["submitted"] * US, {}))
    for when, text in state["notes"]:
        root.events.append(("note", when * US, {"message": text}))
    for i, (start, end) in enumerate(state["idle"]):
        b.add(f"{b.prefix}/idle/{i}", "idle", start, end, root.span_id)
    for i, (start, end, code, sub, reason) in enumerate(state["holds"]):
        what = explain(code, sub, reason)
        span = b.add(f"{b.prefix}/held/{i}", "held", start, end, root.span_id, status="error",
                     **{"hold.code": code, "hold.subcode": sub, "hold.reason": reason, "hold.label": what["label"],
                        "hold.meaning": what["meaning"], "hold.suggestion": what["suggestion"]})
        if end is not None and not (state["aborted"] is not None and end == state["ended"]):
            span.events.append(("released", end * US, {}))
    last_run = state["runs"][-1]["n"] if state["runs"] else None
    for run in state["runs"]:
        glidein, link = _glidein_link(ad if run["n"] == last_run else {}, run, resolve)
        _run_spans(b, root.span_id, run, glidein, link)
    return b.out
