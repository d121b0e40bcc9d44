"""Which phase a live glidein is in, from the spans it has open now.

A snapshot holds only open spans, so the phase is read from the innermost
of them, and named as ``analysis/phases.py`` names the phases of a finished
glidein wherever the open spans can tell (docs/analysis.md, the phase model):

``running``       a user job span is open (the job wrapper's ``user_job``, or a
                  span with a ``condor.job_id``-like attribute); ``jobs`` lists them
``first_match``   HTCondor's span open, no job open, and none seen in any
                  earlier snapshot of this glidein
``idle_between``  the same after a job was seen (between jobs, or the tail)
``script:<id>``   a validation/setup script open (the innermost one), by its
                  ``glidein.script_id``/``gwms.script.id`` or span name
``cleanup``       only the glidein's span open after HTCondor was seen
``idle_between``  (also) only the glidein's span open after a job was seen, HTCondor
                  untraced (the usual set-up: gwtrace_setup.sh and the job wrapper)
``download``      only the glidein's span open, a script seen before, no job nor
                  HTCondor yet (between scripts: fetching the next one)
``starting``      only the glidein's span open and nothing seen yet: validation,
                  HTCondor's start or the wait for a first job, which untraced
                  scripts and HTCondor do not tell apart
``other:<name>``  the innermost open span is none of these
``unknown``       nothing open (the sidecar runs, nothing is traced now)

How long: since the phase's span started (the job's, the script's,
HTCondor's); for the phases no open span marks (``idle_between``,
``download``, ``cleanup``, ``starting``), since the first snapshot that showed the phase
(so at most one interval late). Python 3.9-compatible: the embedded
store runs this inside the sidecar, so it lives with the store's live
snapshots (``store.live``), below the live view that reads them.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

Span = Dict[str, Any]

_JOB_IDS = ("condor.job_id", "htcondor.job.id", "condor.job.id")
_JOB_NAMES = ("job", "user_job", "condor_job_wrapper.sh", "gwtrace-job-wrapper")
_CONDOR = re.compile(r"^(condor|htcondor|condor_startup\.sh|condor_master|condor_startd)$")
_SCRIPT_SUFFIXES = (".sh", ".source", ".py", ".pl")
_SCRIPT_IDS = ("glidein.script_id", "gwms.script.id", "glidein.script")


def is_job(span: Span) -> bool:
    attrs = span["attributes"]
    return span["name"] in _JOB_NAMES or any(k in attrs for k in _JOB_IDS) or attrs.get("glidein.phase") == "job"


def is_condor(span: Span) -> bool:
    return bool(_CONDOR.match(span["name"])) or span["attributes"].get("glidein.phase") == "condor"


def is_glidein(span: Span) -> bool:
    """The glidein's own span: ``glidein`` (the set-up script's) or a top-level ``glidein_startup.sh``."""
    return span["name"] == "glidein" or (span["name"] == "glidein_startup.sh" and not span.get("parent_open"))


def script_id(span: Span) -> str:
    attrs = span["attributes"]
    for key in _SCRIPT_IDS:
        value = attrs.get(key)
        if isinstance(value, str) and value and not (span["name"] == "glidein" and key == "glidein.script_id"):
            return value
    return span["name"]


def _depths(spans: List[Span]) -> Dict[str, int]:
    """Nesting depth of each open span among the open spans (0: its parent is not open)."""
    by_id = {s["span_id"]: s for s in spans}
    depth: Dict[str, int] = {}

    def of(span: Span, guard: int = 0) -> int:
        sid = span["span_id"]
        if sid in depth:
            return depth[sid]
        parent = by_id.get(span["parent_span_id"])
        value = 0 if parent is None or guard > 256 else of(parent, guard + 1) + 1
        depth[sid] = value
        return value

    for span in spans:
        span["parent_open"] = span["parent_span_id"] in by_id
        of(span)
    return depth


def root_of(spans: List[Span]) -> Optional[Span]:
    """The glidein's span if open, else the earliest top-level open span: its arrival ends the snapshot."""
    if not spans:
        return None
    _depths(spans)
    tops = [s for s in spans if not s["parent_open"]]
    glideins = [s for s in tops if is_glidein(s)]
    return min(glideins or tops or spans, key=lambda s: s["start_ns"])


def _between(seen: Dict[str, Any]) -> str:
    """The phase when only the glidein's own span is open: what was seen before tells."""
    if seen["condor"]:
        return "cleanup"
    if seen["jobs"]:
        return "idle_between"
    return "download" if seen["scripts"] else "starting"


def classify(spans: List[Span], seen: Dict[str, Any], previous: Optional[Tuple[str, int]],
             taken_ns: int) -> Tuple[str, int, List[Span], Dict[str, Any]]:
    """(phase, since_ns, open job spans, updated ``seen``) for one snapshot (module docstring).

    ``seen`` remembers across snapshots what no longer shows (jobs that ran,
    HTCondor having started); ``previous`` is the last snapshot's (phase, since).
    """
    depth = _depths(spans)
    seen = {"jobs": list(seen.get("jobs", [])), "condor": bool(seen.get("condor")), "scripts": bool(seen.get("scripts"))}
    jobs = sorted((s for s in spans if is_job(s)), key=lambda s: s["start_ns"])
    condor = [s for s in spans if is_condor(s)]
    for job in jobs:
        if job["span_id"] not in seen["jobs"]:
            seen["jobs"].append(job["span_id"])
    seen["jobs"] = seen["jobs"][-1000:]
    seen["condor"] = seen["condor"] or bool(condor)
    since: Optional[int] = None
    if jobs:
        phase, since = "running", jobs[0]["start_ns"]
    elif condor:
        phase = "idle_between" if seen["jobs"] else "first_match"
        if phase == "first_match":
            since = min(s["start_ns"] for s in condor)
    else:
        inner = max(spans, key=lambda s: (depth[s["span_id"]], s["start_ns"])) if spans else None
        if inner is None:
            phase = "unknown"
        elif is_glidein(inner):
            phase = _between(seen)
        elif inner["name"].endswith(_SCRIPT_SUFFIXES) or any(k in inner["attributes"] for k in _SCRIPT_IDS):
            phase, since = "script:" + script_id(inner), inner["start_ns"]
            seen["scripts"] = True
        else:
            phase, since = "other:" + inner["name"], inner["start_ns"]
    if since is None:
        since = previous[1] if previous is not None and previous[0] == phase else taken_ns
    return phase, since, jobs, seen
