"""The glidein phase model: a glidein's life cut into phases that tile it.

One model for every glidein, traced or backfilled, because it reads only the
glidein record (``GlideinRecord.to_dict()``): the factory's submission and the
CE hand-over (Condor-G events), the glidein's start, each script it ran (the
long XML's per-script times, or the script spans of a traced glidein),
HTCondor's start and end, each user job, and the glidein's end.

Phases, in the order they can happen (docs/analysis.md has the table):

``factory_queue``  submitted by the factory -> handed to the CE
``ce_queue``       handed to the CE -> the glidein starts on a worker node
``download``       before each script: fetching and checking its files
``script:<id>``    one validation/setup script, by its id
``htcondor_start`` after the last script -> HTCondor starts
``first_match``    HTCondor up -> the first user job starts (all of it, if none ever does)
``running``        at least one user job running
``idle_between``   between jobs, none running
``idle_tail``      after the last job -> HTCondor ends (retiring/draining)
``cleanup``        after HTCondor (or a failed script) -> the glidein ends
``unknown``        a stretch whose bounds the files do not give (with the reason)

Each phase starts where the previous one ended: whatever the data, the phases
of a glidein cover [first known time, end] with no gap and no overlap (a test
for every record of the samples and generated factories). A time that goes
backwards (clock skew between the factory and the node) is clamped, never
turned into a negative phase.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from gwtrace.factory.canonical import job_units

Record = Dict[str, Any]
CONDOR_SCRIPT = "condor_startup.sh"


@dataclass
class Phase:
    """One stretch of a glidein's life."""

    name: str
    start: float
    end: float
    reason: Optional[str] = None   # for ``unknown``: why the bounds are not known
    failed: bool = False           # the phase in which the glidein failed (a failing script)

    @property
    def seconds(self) -> float:
        return self.end - self.start

    @property
    def kind(self) -> str:
        """``script`` for every script phase, else the name: what statistics group by."""
        return "script" if self.name.startswith("script:") else self.name


class _Cursor:
    """Appends phases end to end: each starts where the last one ended."""

    def __init__(self, start: float) -> None:
        self.at = start
        self.phases: List[Phase] = []

    def to(self, name: str, end: Optional[float], reason: Optional[str] = None, failed: bool = False) -> None:
        if end is None or end <= self.at:
            if failed and self.phases and self.phases[-1].name == name:
                self.phases[-1].failed = True
            return
        if self.phases and self.phases[-1].name == name and self.phases[-1].reason == reason:
            self.phases[-1].end = end              # the same phase again: one longer stretch
        else:
            self.phases.append(Phase(name, self.at, end, reason, failed))
        self.at = end


def _job_spans(record: Record, lo: float, hi: float) -> List[Tuple[float, float]]:
    """The union of the jobs' running times inside [lo, hi], as sorted disjoint intervals."""
    spans = sorted((max(j["start"], lo), min(j["end"] if j.get("end") is not None else hi, hi))
                   for j in record.get("jobs") or [] if j.get("start") is not None)
    merged: List[Tuple[float, float]] = []
    for start, end in spans:
        if end <= start:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def lifetime(record: Record) -> Tuple[Optional[float], Optional[float]]:
    """[first known time, end] of a glidein."""
    known = [record.get(k) for k in ("submitted", "ce_submitted", "started", "condor_start", "condor_end", "ended")]
    known = [t for t in known if t is not None]
    if not known:
        return None, None
    end = record.get("ended") if record.get("ended") is not None else max(known)
    return min(known), max(end, max(known))


def phases(record: Record) -> List[Phase]:
    """The glidein's phases, tiling its lifetime ([] when no time at all is known)."""
    begin, end = lifetime(record)
    if begin is None or end is None:
        return []
    cur = _Cursor(begin)
    if record.get("submitted") is not None:
        cur.to("factory_queue", record.get("ce_submitted"))
        cur.to("ce_queue", record.get("started"))
    elif record.get("ce_submitted") is not None:
        cur.to("ce_queue", record.get("started"))
    condor_start = record.get("condor_start")
    scripts = [s for s in record.get("scripts") or []
               if s.get("start") is not None and not str(s.get("id", "")).endswith(CONDOR_SCRIPT)
               and (condor_start is None or s["start"] <= condor_start)]
    for script in scripts:
        cur.to("download", script["start"])
        failed = script.get("status") == "ERROR"
        cur.to(f"script:{script['id']}", script.get("end") if script.get("end") is not None else script["start"],
               failed=failed)
        if failed and condor_start is None:
            break
    if condor_start is not None:
        _condor(cur, record, condor_start)
    elif not scripts:
        cur.to("unknown", end, reason="no per-script times (no long XML in .err) and no HTCondor start")
    elif not any(s.get("status") == "ERROR" for s in scripts):
        cur.to("unknown", end, reason="the scripts passed but HTCondor's start is not in the files")
    cur.to("cleanup", end)
    return cur.phases


def _condor(cur: _Cursor, record: Record, condor_start: float) -> None:
    """HTCondor's start, the wait for the first job, jobs, idle stretches and the tail."""
    cur.to("htcondor_start", condor_start)
    condor_end = record.get("condor_end")
    hi = condor_end if condor_end is not None else max(
        [j["end"] for j in record.get("jobs") or [] if j.get("end") is not None] + [condor_start])
    running = _job_spans(record, condor_start, hi)
    if not running:
        cur.to("first_match", condor_end)
    for index, (start, stop) in enumerate(running):
        cur.to("first_match" if index == 0 else "idle_between", start)
        cur.to("running", stop)
    if running:
        cur.to("idle_tail", condor_end)
    if condor_end is None:
        cur.to("unknown", record.get("ended"), reason="HTCondor's end is not in the files (killed?)")


def canonical_units(record: Record) -> float:
    """The glidein's size in canonical units: phase seconds x this = canonical seconds."""
    return job_units(record.get("cpus") or 1, record.get("memory_mb") or 2048)
