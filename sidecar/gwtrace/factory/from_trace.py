"""A glidein record from a stored trace: for glideins known by their spans only.

A glidein that ran gwtrace sends a ``glidein`` span (the root: the glidein's
own start, end and exit; its final CPUs, memory and GPUs as attributes) whose
resource carries the pilot's identity (``glidein.*``, from its
glidein_config), one span per step (the ids ``to_trace.script_span_key``
derives), HTCondor, and one ``user_job`` span per job (the job wrapper). Those
give the record's identity, times, scripts and jobs, and so its canonical
categories; GlideinWMS's own figures need the ``.out`` and are left empty,
with the reason. A glidein whose root has not come yet (still running, or its
end lost) gets a record from its other spans, ``incomplete`` for that reason.
When the factory's files are read for the same glidein (same key), the store
merges both into one record (``factory/merge.py``).

The same reading works on a backfilled trace (``to_trace``'s span names and
attributes), so a record can be rebuilt from traces kept in another store.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from .record import CPUS_ASSUMED, MEMORY_ASSUMED, GlideinRecord, reaccount
from .startd_history import JobRecord
from .to_trace import BACKFILLED, glidein_trace_id, is_condor_startup, script_span_key, span_id
from .xmlresult import ScriptResult

Span = Dict[str, Any]
NO_OUT = "known from its trace only: GlideinWMS's own figures need the factory's .out (gwtrace ingest --factory-logs)"
RUNNING = "no end yet: still running, or its end has not come home (its .out not read yet)"
_SCRIPT_SUFFIXES = (".sh", ".source", ".py")
_STATUS = {2: "ERROR", 1: "OK"}


def _secs(ns: Optional[int]) -> Optional[int]:
    return None if ns is None else int(ns // 1_000_000_000)


def _int(value: Any) -> Optional[int]:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def find_root(spans: List[Span]) -> Optional[Span]:
    """The glidein's span: a live one if there is one (the set-up script's ``glidein``, or a traced
    ``glidein_startup.sh`` at the top), the earliest; else the backfilled root."""
    def is_glidein(span: Span) -> bool:
        if span["resource"].get("service.name") != "glidein":
            return False
        return span["name"] == "glidein" or (span["name"] == "glidein_startup.sh" and not span["parent_span_id"])

    roots = [s for s in spans if is_glidein(s)]
    live = [s for s in roots if s["attributes"].get("gwtrace.source") != BACKFILLED]
    chosen = live or roots
    return min(chosen, key=lambda s: s["start_ns"]) if chosen else None


_JOB_IDS = ("condor.job_id", "htcondor.job.id", "condor.job.id")


def _is_job(span: Span) -> bool:
    return span["name"] in ("job", "user_job", "condor_job_wrapper.sh") or any(k in span["attributes"] for k in _JOB_IDS)


def _identity(rec: GlideinRecord, resource: Dict[str, Any], final: Dict[str, Any]) -> None:
    """Identity from the resource; CPUs, memory and GPUs from ``final`` (the root's attributes: the values
    GlideinWMS finally set) before the resource (set-up time, possibly before they were known)."""
    rec.cluster = _int(resource.get("glidein.cluster_id"))
    rec.proc = _int(resource.get("glidein.proc_id"))
    rec.schedd = resource.get("glidein.schedd")
    rec.factory = resource.get("glidein.factory")
    rec.site = resource.get("glidein.site")
    rec.entry = resource.get("glidein.entry")
    rec.frontend = resource.get("glidein.client")
    rec.glidein_uuid = resource.get("glidein.uuid")
    rec.cpus = _int(final.get("glidein.cpus", resource.get("glidein.cpus")))
    rec.memory_mb = _int(final.get("glidein.memory_mb", resource.get("glidein.memory_mb")))
    rec.gpus = _int(final.get("glidein.gpus", resource.get("glidein.gpus"))) or 0
    rec.max_walltime = _int(final.get("glidein.max_walltime", resource.get("glidein.max_walltime")))
    if rec.cpus is None:
        rec.cpus = 1
        rec.notes.append(f"{CPUS_ASSUMED}: 1 core assumed")
    if rec.memory_mb is None:
        rec.memory_mb = 2048 * rec.cpus
        rec.notes.append(f"{MEMORY_ASSUMED}: 2 GB per core assumed")


#: positions a step's id is looked for at (a glidein runs some 30 to 60 scripts; its trace may hold only some)
STEP_POSITIONS = 256


def _is_step(span: Span, root: Span) -> bool:
    """A glidein step by its id: a child of the root whose id is ``span_id(trace, script/<i>/<name>)`` for a
    position ``i`` (only spans no cheaper rule names are hashed: a few per glidein)."""
    if span["parent_span_id"] != root["span_id"]:
        return False
    trace, name, sid = span["trace_id"], span["name"], span["span_id"]
    return any(span_id(trace, script_span_key(index, name)) == sid for index in range(STEP_POSITIONS))


def _is_script(span: Span, root: Span, by_id: Dict[str, Span]) -> bool:
    """A script the glidein ran: marked so, a step by its derived id, or a script file run by the glidein
    itself, directly or through its own functions (at the ``scripts`` level a glidein's ``fetch_file`` has a
    span, and the validation scripts it runs are its children)."""
    if "glidein.script" in span["attributes"] or "gwms.script.id" in span["attributes"]:
        return True
    if not span["name"].endswith(_SCRIPT_SUFFIXES) or span["name"] in ("condor_startup.sh", "gwtrace_setup.sh"):
        return _is_step(span, root)
    parent = span["parent_span_id"]
    for _ in range(64):   # through the glidein's function spans, up to the glidein
        if parent == root["span_id"]:
            return True
        above = by_id.get(parent)
        if above is None or above["attributes"].get("gwtrace.kind") != "function":
            return False
        parent = above["parent_span_id"]
    return False


def _job(span: Span) -> JobRecord:
    attrs = span["attributes"]
    start, end = _secs(span["start_ns"]), _secs(span["end_ns"])
    signal = _int(attrs.get("condor.exit_signal") or attrs.get("gwtrace.forwarded_signal"))
    code = _int(attrs.get("process.exit.code", attrs.get("process.exit_code")))
    if code is None and signal is None and span["status_code"] == 2:
        code = 1
    job_id = next((attrs[k] for k in _JOB_IDS if attrs.get(k)), span["span_id"])
    return JobRecord(str(job_id),
                     start, end, None if start is None or end is None else end - start, code, signal,
                     _int(attrs.get("condor.request_cpus")) or 1, 2048, 0, bool(attrs.get("condor.preempted")), None)


def record_from_trace(spans: List[Span]) -> Optional[GlideinRecord]:
    """The glidein record a trace describes, or None if the trace is no glidein's."""
    root = find_root(spans)
    if root is None:
        return _running(spans)
    rec = GlideinRecord()
    final = root["attributes"]
    _identity(rec, root["resource"], final)
    backfilled = final.get("gwtrace.source") == BACKFILLED
    rec.started, rec.ended = _secs(root["start_ns"]), _secs(root["end_ns"])
    exit_code = _int(final.get("glidein.exit_code"))
    rec.status = "ERROR" if exit_code else _STATUS.get(root["status_code"], "UNKNOWN")
    if rec.status == "UNKNOWN" and exit_code == 0:
        rec.status = "OK"
    rec.failed_script = final.get("glidein.failed_script")
    rec.mark_incomplete(NO_OUT)
    _fill(rec, spans, root)
    if backfilled:
        rec.notes.append("rebuilt from a backfilled trace: the factory's files say more")
    _account(rec)
    return rec


def _fill(rec: GlideinRecord, spans: List[Span], root: Span) -> None:
    """Scripts, HTCondor, jobs and the Condor-G queue from the spans under ``root``."""
    by_id = {span["span_id"]: span for span in spans}
    condor_step = None
    for span in spans:
        name = span["name"]
        if span is root or name in ("glidein", "glidein_startup.sh"):
            continue
        if name == "condor" or (name == "condor_startup.sh" and not _is_script(span, root, by_id)):
            if name == "condor" or rec.condor_start is None:  # the backfill's own span says it best
                rec.condor_start, rec.condor_end = _secs(span["start_ns"]), _secs(span["end_ns"])
        elif _is_job(span):
            rec.jobs.append(_job(span))
        elif name == "factory.queue":
            rec.ce_submitted = _secs(span["end_ns"])
        elif name == "condorg.queued":  # a backfilled glidein: from the factory's submission to its start
            rec.submitted, rec.started = _secs(span["start_ns"]), _secs(span["end_ns"])
        elif _is_script(span, root, by_id):
            status = _STATUS.get(span["status_code"], "OK")
            rec.scripts.append(ScriptResult(id=name, status=status, start=_secs(span["start_ns"]),
                                            end=_secs(span["end_ns"]), detail=span.get("status_message") or None))
            if status == "ERROR" and rec.failed_script is None:
                rec.failed_script = name
            if is_condor_startup(name):
                condor_step = span
    if rec.condor_start is None and condor_step is not None:   # a live glidein: its condor_startup.sh step
        rec.condor_start, rec.condor_end = _secs(condor_step["start_ns"]), _secs(condor_step["end_ns"])
    rec.scripts.sort(key=lambda s: s.start or 0)
    rec.jobs.sort(key=lambda j: j.start or 0)


def _running(spans: List[Span]) -> Optional[GlideinRecord]:
    """The record of a glidein whose root has not come (still running, or its end lost): only for the
    glidein's own trace (the id its resource's identity gives), so a job's trace never becomes a glidein."""
    mine = [s for s in spans if s["resource"].get("service.name") == "glidein"
            and s["resource"].get("glidein.cluster_id") is not None]
    if not mine:
        return None
    resource = mine[0]["resource"]
    own = glidein_trace_id(resource.get("glidein.factory"), resource.get("glidein.schedd"),
                           resource.get("glidein.cluster_id"), resource.get("glidein.proc_id"),
                           resource.get("glidein.uuid"))
    if mine[0]["trace_id"] != own:
        return None
    rec = GlideinRecord()
    _identity(rec, resource, {})
    rec.started = _secs(min(s["start_ns"] for s in mine))
    rec.mark_incomplete(RUNNING)
    rec.mark_incomplete(NO_OUT)
    top = {"span_id": span_id(own, "glidein"), "resource": resource}     # the root to come (its derived id)
    _fill(rec, [s for s in spans if s is not top], top)
    _account(rec)
    return rec


def _account(rec: GlideinRecord) -> None:
    """The canonical categories from what the trace says (jobs placed in time, else validation or overhead)."""
    reaccount(rec, lambda: empty_category(rec))


def empty_category(rec: GlideinRecord) -> str:
    """Where the time of a traced glidein that ran no known job goes: validation fail when it failed or never
    reached HTCondor, else a decision problem (HTCondor ran and got no job)."""
    return "validation_fail" if rec.status == "ERROR" or rec.condor_start is None else "decision_problem"
