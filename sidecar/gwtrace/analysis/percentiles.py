"""Each span of a glidein's trace against the same phase at the same entry: its percentile.

The trace page's question "is this slow?" has an answer only against
something: here, the same phase of the phase model (``phases.py``) in every
glidein record of the same entry the store holds. A span is matched to what
it measures by its name and attributes (as ``factory/to_trace.py`` names
backfilled spans, and the shim names live ones):

- the root (no parent): ``lifetime``, first known time -> end;
- ``condorg.queued``: ``queued``, submitted -> started (both queues);
- ``factory.queue``, ``ce.queue``: ``factory_queue``, ``ce_queue``;
- a validation script (``glidein.script``, or the name is a script's id or its
  file name): ``script:<id>``, each run of that script;
- ``condor`` (or the ``condor_startup.sh`` script, which brackets it):
  ``htcondor``, HTCondor's start -> end;
- a user job: ``job``, every job's length at the entry (one value per job).

Anything else has no phase: it is said, not guessed. The percentile is the
mid-rank share of the group at or below the span's length (50 = typical, 99
= longer than nearly all); with fewer than ``MIN_N`` values (20, as for the
outliers) the group is too small to say, and the answer gives ``n`` and the
reason instead of a number.
"""

from __future__ import annotations

import bisect
import statistics
from collections import defaultdict
from typing import Any, Dict, Iterable, List, Optional

from .outliers import MIN_N
from .phases import Record, lifetime, phases

Span = Dict[str, Any]


def measures(rec: Record) -> Dict[str, List[float]]:
    """What one glidein contributes to each comparison group (seconds)."""
    out: Dict[str, List[float]] = defaultdict(list)
    per_phase: Dict[str, float] = defaultdict(float)
    for phase in phases(rec):
        per_phase[phase.name] += phase.seconds
    for name, seconds in per_phase.items():
        if not name.startswith("script:"):
            out[name].append(seconds)
    for script in rec.get("scripts") or []:  # every run, the 0-second ones too (the phases skip those)
        if script.get("id") and script.get("start") is not None and script.get("end") is not None:
            out[f"script:{script['id']}"].append(max(0.0, script["end"] - script["start"]))
    if rec.get("submitted") is not None and rec.get("started") is not None:
        out["queued"].append(max(0.0, rec["started"] - rec["submitted"]))
    begin, end = lifetime(rec)
    if begin is not None and end is not None:
        out["lifetime"].append(end - begin)
    if rec.get("condor_start") is not None and rec.get("condor_end") is not None:
        out["htcondor"].append(max(0.0, rec["condor_end"] - rec["condor_start"]))
    for job in rec.get("jobs") or []:
        if job.get("start") is not None and job.get("end") is not None:
            out["job"].append(max(0.0, job["end"] - job["start"]))
    return out


def span_phase(span: Span, script_ids: Iterable[str]) -> Optional[str]:
    """The comparison group of a span (the table above), or None when no phase matches it."""
    name, attrs = span["name"], span.get("attributes") or {}
    if not span.get("parent_span_id"):
        return "lifetime"
    if name == "condorg.queued":
        return "queued"
    if name in ("factory.queue", "ce.queue"):
        return name.replace(".", "_")
    script = attrs.get("glidein.script")
    if not script:
        script = next((s for s in script_ids if name in (s, s.rsplit("/", 1)[-1])), None)
    if script and not str(script).endswith("condor_startup.sh"):
        return f"script:{script}"
    if name in ("condor", "htcondor") or name.endswith("condor_startup.sh"):
        return "htcondor"
    if name == "job" or "condor.job_id" in attrs or any(k.startswith("job.") for k in attrs):
        return "job"
    return None


def percentile(values: List[float], value: float) -> float:
    """Mid-rank percentile of ``value`` in ``values`` (sorted): ties count half."""
    below = bisect.bisect_left(values, value)
    equal = bisect.bisect_right(values, value) - below
    return round(100.0 * (below + 0.5 * equal) / len(values), 1)


def span_percentiles(spans: List[Span], rec: Record, group: Iterable[Record],
                     min_n: int = MIN_N) -> Dict[str, Dict[str, Any]]:
    """{span id: {phase, percentile, n, seconds, median_s[, reason]}} for every span of the trace."""
    pooled: Dict[str, List[float]] = defaultdict(list)
    for other in group:
        for key, values in measures(other).items():
            pooled[key].extend(values)
    for values in pooled.values():
        values.sort()
    script_ids = [str(s.get("id")) for s in rec.get("scripts") or [] if s.get("id")]
    out: Dict[str, Dict[str, Any]] = {}
    for span in spans:
        seconds = max(0, span["end_ns"] - span["start_ns"]) / 1e9
        phase = span_phase(span, script_ids)
        values = pooled.get(phase or "", [])
        row: Dict[str, Any] = {"phase": phase, "percentile": None, "n": len(values), "seconds": seconds,
                               "median_s": statistics.median(values) if values else None}
        if phase is None:
            row["reason"] = "no phase of the phase model matches this span"
        elif len(values) < min_n:
            row["reason"] = f"only {len(values)} values of {phase} at this entry (fewer than {min_n}): too few to say"
        else:
            row["percentile"] = percentile(values, seconds)
        out[span["span_id"]] = row
    return out
