"""A job's journey for people: find the job by any of its ids, then its spans as a tree, its current
state, and the glideins that ran it (the page and ``gwtrace job`` show the same dict).

Which spans: the job's own (its ``htcondor.job`` span and everything under
it: idle, held, executing, and what the job wrapper and the job itself
traced under "executing").  A span of the job that arrived without a known
parent (e.g. a wrapper whose run number drifted, docs/journey.md) is put
under the execution that was running when it started.
"""

import re
from typing import Any, Dict, List, Optional

from gwtrace.factory.to_trace import span_id as derive_span_id
from gwtrace.wire import traceparent
from . import table
from gwtrace.store.glidein_parts import glidein_of_job

_CLUSTER_PROC = re.compile(r"^(\d+)(?:\.(\d+))?$")
_GLOBAL = re.compile(r"^(?P<schedd>[^#]+)#(?P<cluster>\d+)\.(?P<proc>\d+)#\d+$")


def parse_job_id(text: str) -> Dict[str, Any]:
    """``cluster[.proc]``, ``cluster.proc@schedd``, a GlobalJobId, a TRACEPARENT or a trace id; ValueError else."""
    text = (text or "").strip()
    # any_case: a person's typed or pasted id, as the bare trace id below (a producer's rule is stricter)
    tp = traceparent.parse(text, any_case=True)
    if tp is not None:
        return {"kind": "trace", "trace_id": tp.trace_id, "text": text}
    if re.fullmatch(r"[0-9a-fA-F]{32}", text):
        return {"kind": "trace", "trace_id": text.lower(), "text": text}
    match = _GLOBAL.match(text)
    if match:
        return {"kind": "global", "value": text, "schedd": match["schedd"], "cluster": int(match["cluster"]),
                "proc": int(match["proc"]), "text": text}
    head, at, schedd = text.partition("@")
    match = _CLUSTER_PROC.match(head)
    if match:
        ident = {"kind": "at" if at else "local", "cluster": int(match[1]), "proc": int(match[2] or 0), "text": text}
        if at:
            if not schedd:
                raise ValueError(f"not a job id: {text!r} (no schedd after @)")
            ident["schedd"] = schedd
        return ident
    raise ValueError(f"not a job id: {text!r} (give cluster.proc, cluster.proc@schedd, a GlobalJobId or a TRACEPARENT)")


def find_jobs(store: Any, text: str) -> List[Dict[str, Any]]:
    """The stored states matching an id; LookupError (one clear line) when none does."""
    ident = parse_job_id(text)
    states = table.find(store.reader(), ident)
    if states:
        return states
    if ident["kind"] == "trace":
        if store.get_trace(ident["trace_id"]):
            raise LookupError(f"trace {ident['trace_id']} is in the store but holds no HTCondor job "
                              "(ingest the job's event log with gwtrace ingest --condor-log)")
        raise LookupError(f"no trace {ident['trace_id']} in the store {store.path}")
    raise LookupError(f"no job {text} in the store {store.path} "
                      "(ingest its event log with gwtrace ingest --condor-log)")


def _subtree(spans: List[Dict[str, Any]], state: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The job's spans, wrapper spans whose parent is unknown put under the run that covered them."""
    job_id = f"{state['cluster']}.{state['proc']}"
    root_id = derive_span_id(state["trace_id"], f"job/{job_id}")
    by_parent: Dict[str, List[Dict[str, Any]]] = {}
    ids = {s["span_id"] for s in spans}
    for span in spans:
        by_parent.setdefault(span["parent_span_id"], []).append(span)
    runs = [s for s in spans if s["name"] == "executing" and s["parent_span_id"] == root_id]
    run_ids = {run["span_id"]: run for run in runs}
    for span in spans:
        if span["span_id"] == root_id or str(span["attributes"].get("htcondor.job.id", "")) != job_id:
            continue
        parent = run_ids.get(span["parent_span_id"])
        if span["parent_span_id"] in ids and (parent is None or _covers(parent, span)):
            continue
        for run in runs:   # no parent here, or a run that was not executing then: the run that was
            if _covers(run, span) and run is not parent:
                if span["parent_span_id"] in by_parent:
                    by_parent[span["parent_span_id"]].remove(span)
                span["parent_span_id"] = run["span_id"]
                by_parent.setdefault(run["span_id"], []).append(span)
                break
    out, todo = [], [s for s in spans if s["span_id"] == root_id]
    while todo:
        span = todo.pop()
        out.append(span)
        todo.extend(by_parent.get(span["span_id"], []))
    return sorted(out, key=lambda s: (s["start_ns"], s["span_id"]))


def _covers(run: Dict[str, Any], span: Dict[str, Any]) -> bool:
    return run["start_ns"] <= span["start_ns"] <= run["end_ns"]


def _glidein(store: Any, attrs: Dict[str, Any], when: Optional[float] = None) -> Optional[Dict[str, Any]]:
    """The stored record of the glidein a run's span names (by its trace id, else by its Condor-G job
    running at ``when``: a link made before the glidein's uuid was known), in short."""
    trace = attrs.get("glidein.trace_id")
    if not trace:
        return None
    query = "SELECT site, entry, submitted, started, ended, status, record FROM glideins WHERE trace_id = ?"
    row = store.reader().execute(query, (bytes.fromhex(trace),)).fetchone()
    if row is None:
        key = glidein_of_job(store.reader(), attrs.get("glidein.factory"), attrs.get("glidein.schedd"),
                             attrs.get("glidein.cluster_id"), attrs.get("glidein.proc_id", 0), when)
        row = store.reader().execute(query, (key,)).fetchone() if key is not None else None
        trace = key.hex() if key is not None else trace
    if row is None:
        return {"trace_id": trace, "known": False}
    import json

    record = json.loads(row[6])
    return {"trace_id": trace, "known": True, "site": row[0], "entry": row[1], "submitted": row[2],
            "started": row[3], "validated": record.get("condor_start"), "ended": row[4], "status": row[5],
            "failed_script": record.get("failed_script")}


def _node(span: Dict[str, Any]) -> Dict[str, Any]:
    return {"name": span["name"], "span_id": span["span_id"], "parent": span["parent_span_id"],
            "start": span["start_ns"] / 1e9, "end": span["end_ns"] / 1e9,
            "duration_s": (span["end_ns"] - span["start_ns"]) / 1e9,
            "status": {0: "unset", 1: "ok", 2: "error"}.get(span["status_code"], "unset"),
            "open": bool(span["attributes"].get("gwtrace.open")), "attributes": span["attributes"],
            "events": [{"name": e["name"], "time": e["time_ns"] / 1e9, "attributes": e["attributes"]}
                       for e in span["events"]],
            "links": span["links"]}


def current(state: Dict[str, Any], now: float) -> Dict[str, Any]:
    """The job's state now, and since when (the start of the open interval, else the end)."""
    since = state["ended"]
    if state["status"] == "held" and state["holds"]:
        since = state["holds"][-1][0]
    elif state["status"] == "idle" and state["idle"]:
        since = state["idle"][-1][0]
    elif state["status"] == "running" and state["runs"]:
        since = state["runs"][-1]["start"]
    out = {"status": state["status"], "since": since, "for_s": None if since is None else max(0, now - since)}
    if state["status"] == "held" and state["holds"]:
        out["hold_reason"] = state["holds"][-1][4] or None
    if state["exit"]:
        out["exit"] = state["exit"]
    if state["aborted"] is not None:
        out["aborted"] = state["aborted"]
    return out


def journey(store: Any, state: Dict[str, Any], now: float) -> Dict[str, Any]:
    """Everything the page and ``gwtrace job`` show about one job."""
    spans = _subtree(store.get_trace(state["trace_id"]), state)
    nodes = [_node(s) for s in spans]
    for node in nodes:
        if node["open"]:       # still open at the last event read: how long so far, until now
            node["elapsed_s"] = max(node["duration_s"], now - node["start"])
        if node["name"] == "executing":
            glidein = _glidein(store, node["attributes"], node["start"])
            if glidein:
                node["glidein"] = glidein
    ad = state["ad"]
    return {"job": {"id": f"{state['cluster']}.{state['proc']}", "schedd": state["schedd"],
                    "global_id": ad.get("GlobalJobId"), "owner": state.get("owner"), "trace_id": state["trace_id"],
                    "traceparent": ad.get("TraceParent"), "submitted": state["submitted"], "ended": state["ended"],
                    "runs": len(state["runs"]), "holds": len(state["holds"]),
                    "schedd_aliases": state.get("schedd_aliases") or []},
            "current": current(state, now), "spans": nodes}
