"""A glidein as the analysis sees it: the few numbers its statistics, hints and outliers read.

Why a summary and not the record: ``gwtrace analyze`` must go through a pool's
100 000 glideins in seconds and in a few hundred MB. A whole record is some
2 KB of JSON and a dict of dicts in memory, and its phases cost ~60-170 us to
work out; the summary is the phases already worked out, the per-script
times, the four waits and the job counts, as one flat JSON list of a few
hundred bytes. The store keeps it beside the record at ingest
(``store/glideins.py``); records from a factory's files or from a Jaeger API
are summarised on the fly. Either way the same ``summarize`` makes it, so the
answers cannot differ.

The analysis reads summaries one at a time (``Accumulator.add``) and keeps
only per-group numbers and an index per glidein, never the summaries
themselves; parts of a period can be read in parallel and their
accumulators merged (``fold.py``).
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

from .phases import Record, canonical_units, phases

#: the version of the list below: a stored summary of another version is made again from the record
VERSION = 2   # a change here has every store summarise again when it next opens (store.parts; 2: REF's uuid)

# positions in a summary list
(V, REF, SITE, ENTRY, FRONTEND, STATUS, FAILED_SCRIPT, CPUS, UNITS, STARTED, ENDED, PHASES, SCRIPTS, WAITS,
 JOBS, CONDOR, CANON, VALIDATION, SCRIPT_PHASES) = range(19)
# PHASES: [kind, seconds, failed] per phase kind (every script phase is the kind ``script``), in order of
# first appearance; SCRIPT_PHASES: [i, seconds] per script phase, i the first script of that id in SCRIPTS
# a script: [id, seconds or None, failed, message or None]
# WAITS: [first_job_wait, idle_tail, ce_wait]; JOBS: [jobs, killed, [job wall seconds]]
# CONDOR: [HTCondor started (0/1), HTCondor's life in seconds or None]
# CANON: [validation_fail, preemption_badput, decision_problem] or None (no canonical figures)
# REF: [cluster, proc, schedd, factory, glidein uuid] (what the glidein's trace id is derived from)
CANON_KEYS = ("validation_fail", "preemption_badput", "decision_problem")

Summary = List[Any]


def _phases(rec: Record, scripts: List[List[Any]]) -> Tuple[List[List[Any]], List[List[Any]]]:
    """Seconds per phase kind and whether the glidein failed in it; seconds per script phase, by script."""
    kinds: Dict[str, List[Any]] = {}
    by_script: Dict[str, List[Any]] = {}
    first = {}
    for at, script in enumerate(scripts):
        first.setdefault(script[0], at)
    for phase in phases(rec):
        kind = phase.kind
        cell = kinds.get(kind)
        if cell is None:
            kinds[kind] = [kind, phase.seconds, int(phase.failed)]
        else:
            cell[1] += phase.seconds
            cell[2] |= int(phase.failed)
        if kind == "script":
            script_id = phase.name[len("script:"):]
            one = by_script.get(script_id)
            if one is None:
                by_script[script_id] = [first[script_id], phase.seconds]
            else:
                one[1] += phase.seconds
    return list(kinds.values()), list(by_script.values())


def phase_names(summary: Summary) -> List[Tuple[str, float]]:
    """Seconds per phase name (each script by its own name), in order of first appearance."""
    out = []
    for kind, seconds, _ in summary[PHASES]:
        if kind == "script":
            scripts = summary[SCRIPTS]
            out.extend(("script:" + scripts[at][0], one) for at, one in summary[SCRIPT_PHASES])
        else:
            out.append((kind, seconds))
    return out


def _scripts(rec: Record) -> List[List[Any]]:
    out = []
    for script in rec.get("scripts") or []:
        seconds = None
        if script.get("start") is not None and script.get("end") is not None:
            seconds = script["end"] - script["start"]
        failed = script.get("status") == "ERROR"
        out.append([script.get("id"), seconds, int(failed), (script.get("detail") or None) if failed else None])
    return out


def _waits(rec: Record) -> List[Optional[float]]:
    return [first_job_wait(rec), idle_tail(rec), ce_wait(rec)]


def first_job_wait(rec: Record) -> Optional[float]:
    """Seconds from HTCondor's start to the first job, for glideins that ran one."""
    starts = [j["start"] for j in rec.get("jobs") or [] if j.get("start") is not None]
    if rec.get("condor_start") is None or not starts:
        return None
    return max(0.0, min(starts) - rec["condor_start"])


def idle_tail(rec: Record) -> Optional[float]:
    """Seconds from the end of the last job to HTCondor's end."""
    ends = [j["end"] for j in rec.get("jobs") or [] if j.get("end") is not None]
    if rec.get("condor_end") is None or not ends:
        return None
    return max(0.0, rec["condor_end"] - max(ends))


def ce_wait(rec: Record) -> Optional[float]:
    """Seconds between the factory handing the glidein to the CE and the glidein starting."""
    if rec.get("ce_submitted") is None or rec.get("started") is None:
        return None
    return max(0.0, rec["started"] - rec["ce_submitted"])


def _jobs(rec: Record) -> List[Any]:
    jobs = rec.get("jobs") or []
    walls = [j["end"] - j["start"] for j in jobs if j.get("end") is not None and j.get("start") is not None]
    return [len(jobs), sum(1 for j in jobs if j.get("preempted")), walls]


def _validation(rec: Record) -> Optional[float]:
    """Seconds from the glidein's start to the end of its last timed script (the trends' validation time)."""
    ended = [s for s in rec.get("scripts") or [] if s.get("end") is not None]
    if not ended or rec.get("started") is None:
        return None
    return ended[-1]["end"] - rec["started"]


def summarize(rec: Record) -> Summary:
    """The summary of one record (``GlideinRecord.to_dict()`` shape), JSON-ready."""
    canon = rec.get("canonical")
    condor_start, condor_end = rec.get("condor_start"), rec.get("condor_end")
    scripts = _scripts(rec)
    kinds, script_phases = _phases(rec, scripts)
    return [
        VERSION, [rec.get("cluster"), rec.get("proc"), rec.get("schedd"), rec.get("factory"), rec.get("glidein_uuid")],
        rec.get("site"), rec.get("entry"), rec.get("frontend"), rec.get("status"), rec.get("failed_script"),
        rec.get("cpus"), canonical_units(rec), rec.get("started"), rec.get("ended"),
        kinds, scripts, _waits(rec), _jobs(rec),
        [int(condor_start is not None),
         condor_end - condor_start if condor_start is not None and condor_end is not None else None],
        None if canon is None else [canon.get(k, 0.0) for k in CANON_KEYS],
        _validation(rec), script_phases,
    ]


def as_summary(item: Any) -> Summary:
    """A record or a summary -> its summary (the analysis functions take either)."""
    return item if isinstance(item, list) else summarize(item)


class Accumulator:
    """Takes glidein summaries one at a time (``add``), keeps only per-group numbers: one pass, any size."""

    def add(self, s: Summary) -> None:
        raise NotImplementedError

    def merge(self, later: "Accumulator") -> None:
        """Take in an accumulator of the same kind that was fed the glideins coming after this one's.

        The result is what one accumulator fed all of them in that order would hold (the same
        quantiles, ties and examples): what lets ``fold`` read the parts of a period in parallel.
        """
        raise NotImplementedError

    def feed(self, items: Iterable[Any]) -> "Accumulator":
        """Add records or summaries (for callers holding a list)."""
        for item in items:
            self.add(as_summary(item))
        return self
