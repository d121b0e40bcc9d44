"""What an operator should change, ranked by the canonical hours it costs.

Each rule looks at glidein records (``GlideinRecord.to_dict()`` dicts, from
factory files or from traces alike) grouped by the scope the fix applies to
(a site for a validation script, an entry for the factory knobs), and gives
a ``Hint`` only when a documented threshold is crossed by enough glideins:
the evidence names the glideins behind it, so every claim can be clicked
through.  Costs are canonical core-hours per day of the analysed period
(docs/analysis.md says how each is counted); a rule that costs nothing
measurable is still listed when its evidence holds, last.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from gwtrace.factory.canonical import job_units
from gwtrace.factory.to_trace import glidein_trace_id

Record = Dict[str, Any]
EXAMPLES = 10  # glideins named in each hint's evidence (the count says how many there are)


@dataclass
class Thresholds:
    """When a rule speaks; every value is documented in docs/analysis.md and settable on the CLI."""

    min_glideins: int = 10              # no statement about a group smaller than this
    script_failure_rate: float = 0.10   # share of a site's glideins failing in one script
    script_failures: int = 5            # ... and at least this many failures
    slow_script_ratio: float = 3.0      # site median / median at all other sites
    slow_script_seconds: float = 30.0   # ... and at least this much slower (s)
    first_job_wait: float = 900.0       # median wait from HTCondor start to the first job (s)
    idle_tail: float = 1800.0           # median idle time after the last job (s)
    preempted_jobs: float = 0.10        # share of an entry's jobs killed by the glidein's end
    ce_wait: float = 3600.0             # median wait at the CE (s) ...
    ce_wait_ratio: float = 3.0          # ... and this many times the median of all entries
    no_job_share: float = 0.5           # share of an entry's running glideins that never got a job

    @classmethod
    def parse(cls, pairs: Sequence[str]) -> "Thresholds":
        """``name=value`` pairs (the CLI's ``--threshold``); an unknown name raises ``ValueError``."""
        out = cls()
        kinds = {f.name: f.type for f in fields(cls)}
        for pair in pairs:
            name, _, value = pair.partition("=")
            if name not in kinds or not value:
                raise ValueError(f"not a threshold NAME=VALUE (names: {', '.join(kinds)}): {pair!r}")
            setattr(out, name, int(value) if kinds[name] in (int, "int") else float(value))
        return out


@dataclass
class Hint:
    """One thing to change, why, what it costs, and the glideins that show it."""

    kind: str
    scope: Dict[str, str]
    summary: str
    action: str
    cost_hours_per_day: float
    evidence: Dict[str, Any]
    glideins: List[Dict[str, Any]] = field(default_factory=list)
    count: int = 0

    def to_dict(self) -> Dict[str, Any]:
        """JSON-ready, rounded for people."""
        out = asdict(self)
        out["cost_hours_per_day"] = round(self.cost_hours_per_day, 2)
        return out


def glidein_ref(rec: Record) -> Dict[str, Any]:
    """How a hint names a glidein: its id and its trace (the same id live and backfilled traces carry)."""
    return {"glidein": f"{rec.get('cluster')}.{rec.get('proc')}@{rec.get('schedd') or '?'}",
            "trace_id": glidein_trace_id(rec.get("factory"), rec.get("schedd"), rec.get("cluster"), rec.get("proc")),
            "site": rec.get("site"), "entry": rec.get("entry")}


def units(rec: Record) -> float:
    """The glidein's size in canonical units (cores, or 2 GB blocks if memory is larger)."""
    return job_units(rec.get("cpus") or 1, rec.get("memory_mb") or 2048)


def period_days(records: Sequence[Record]) -> float:
    """Length of the analysed period, for costs per day (at least one hour, so a tiny sample is not inflated)."""
    starts = [r["started"] for r in records if r.get("started") is not None]
    ends = [r["ended"] for r in records if r.get("ended") is not None]
    if not starts or not ends:
        return 1.0
    return max(max(ends) - min(starts), 3600) / 86400.0


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


def _group(records: Iterable[Record], key: str) -> Dict[str, List[Record]]:
    out: Dict[str, List[Record]] = defaultdict(list)
    for rec in records:
        if rec.get(key):
            out[rec[key]].append(rec)
    return out


def _examples(recs: Iterable[Record], order: Optional[Callable[[Record], float]] = None) -> List[Dict[str, Any]]:
    chosen = sorted(recs, key=order, reverse=True) if order else list(recs)
    return [glidein_ref(r) for r in chosen[:EXAMPLES]]


def failing_scripts(records: List[Record], t: Thresholds, days: float) -> List[Hint]:
    """A validation script failing often at one site: fix the script or stop sending glideins there."""
    hints = []
    for site, recs in _group(records, "site").items():
        failed: Dict[str, List[Record]] = defaultdict(list)
        for rec in recs:
            if rec.get("status") == "ERROR" and rec.get("failed_script"):
                failed[rec["failed_script"]].append(rec)
        for script, bad in failed.items():
            rate = len(bad) / len(recs)
            if len(recs) < t.min_glideins or len(bad) < t.script_failures or rate < t.script_failure_rate:
                continue
            lost = sum(r["canonical"].get("validation_fail", 0.0) for r in bad) / 3600.0
            hints.append(Hint(
                "failing_script", {"site": site, "script": script},
                f"{script} fails in {rate:.0%} of glideins at {site} ({len(bad)} of {len(recs)})",
                f"fix {script} for {site}, or stop sending glideins there until it is fixed "
                "(remove the site from the frontend's match or disable its entries in the factory)",
                lost / days, {"failures": len(bad), "glideins": len(recs), "failure_rate": round(rate, 3),
                              "glideins_lost_per_day": round(len(bad) / days, 1)},
                _examples(bad), len(bad)))
    return hints


def _median_of_counts(counts: Counter) -> float:
    """The median of a multiset given as value -> count (script times are whole seconds: few values)."""
    total = sum(counts.values())
    seen, below = 0, None
    for value in sorted(counts):
        seen += counts[value]
        if below is None and 2 * seen >= total:
            if 2 * seen > total or total % 2:
                return float(value)
            below = value
        elif below is not None:
            return (below + value) / 2.0
    return float(below or 0.0)


def slow_scripts(records: List[Record], t: Thresholds, days: float) -> List[Hint]:
    """A validation script much slower at some sites than everywhere else."""
    runs: Dict[str, Dict[str, List[Tuple[float, Record]]]] = defaultdict(lambda: defaultdict(list))
    for rec in records:
        for script in rec.get("scripts") or []:
            if script.get("start") is not None and script.get("end") is not None and rec.get("site"):
                runs[script["id"]][rec["site"]].append((float(script["end"] - script["start"]), rec))
    hints = []
    for script, by_site in runs.items():
        counts = {site: Counter(d for d, _ in pairs) for site, pairs in by_site.items()}
        everywhere = sum(counts.values(), Counter())
        for site, mine in by_site.items():
            others = everywhere - counts[site]
            if len(mine) < t.min_glideins or sum(others.values()) < t.min_glideins:
                continue
            here, there = _median_of_counts(counts[site]), _median_of_counts(others)
            if here - there < t.slow_script_seconds or here < t.slow_script_ratio * max(there, 1.0):
                continue
            extra = sum(max(0.0, d - there) * units(r) for d, r in mine) / 3600.0
            hints.append(Hint(
                "slow_script", {"site": site, "script": script},
                f"{script} takes {here:.0f} s (median) at {site}, {there:.0f} s elsewhere",
                f"find what {script} waits for at {site} (CVMFS, container image, local disk) or "
                "shorten its timeouts; the pilot holds its cores while it runs",
                extra / days, {"median_s": here, "median_elsewhere_s": there, "runs": len(mine)},
                _examples((r for _, r in mine), order=lambda r, s=script: _script_seconds(r, s)), len(mine)))
    return hints


def _script_seconds(rec: Record, script: str) -> float:
    return sum((s["end"] - s["start"]) for s in rec.get("scripts") or []
               if s.get("id") == script and s.get("end") is not None and s.get("start") is not None)


def _per_entry(records: List[Record], t: Thresholds, measure: Callable[[Record], Optional[float]]
               ) -> Iterable[Tuple[str, List[Tuple[float, Record]], float]]:
    """(entry, [(value, record)], median) for entries with enough glideins where ``measure`` is known."""
    for entry, recs in _group(records, "entry").items():
        values = [(v, r) for r in recs for v in [measure(r)] if v is not None]
        if len(values) >= t.min_glideins:
            yield entry, values, statistics.median(v for v, _ in values)


def _waits(records: List[Record], t: Thresholds, days: float, kind: str, measure: Callable[[Record], Optional[float]],
           threshold: float, summary: str, action: str) -> List[Hint]:
    """Entries whose median ``measure`` is at least ``threshold``: the wait, in canonical hours, is the cost."""
    hints = []
    for entry, values, median in _per_entry(records, t, measure):
        if median < threshold:
            continue
        cost = sum(v * units(r) for v, r in values) / 3600.0
        hints.append(Hint(kind, {"entry": entry}, summary.format(entry=entry, minutes=median / 60), action,
                          cost / days, {"median_s": median, "glideins": len(values)},
                          _examples((r for _, r in values), order=lambda r: measure(r) or 0.0), len(values)))
    return hints


def slow_first_job(records: List[Record], t: Thresholds, days: float) -> List[Hint]:
    """Glideins waiting long for their first job: too many idle glideins requested for the demand."""
    return _waits(records, t, days, "first_job_wait", first_job_wait, t.first_job_wait,
                  "glideins at {entry} wait {minutes:.0f} min (median) for their first job",
                  "request fewer idle glideins for this entry (frontend `idle_glideins_per_entry`, "
                  "`max_idle`) or let them give up sooner (`GLIDEIN_Max_Idle`)")


def long_tails(records: List[Record], t: Thresholds, days: float) -> List[Hint]:
    """Glideins idling long after their last job before they end."""
    return _waits(records, t, days, "idle_tail", idle_tail, t.idle_tail,
                  "glideins at {entry} stay {minutes:.0f} min (median) idle after their last job",
                  "shorten the idle tail: `GLIDEIN_Max_Tail` (seconds a glidein waits for a new job once it has "
                  "run one)")


def preempted_jobs(records: List[Record], t: Thresholds, days: float) -> List[Hint]:
    """Jobs killed by the glidein's end: retire earlier or run longer glideins."""
    hints = []
    for entry, recs in _group(records, "entry").items():
        jobs = [(j, r) for r in recs for j in r.get("jobs") or []]
        killed = [(j, r) for j, r in jobs if j.get("preempted")]
        if len(recs) < t.min_glideins or not jobs or len(killed) / len(jobs) < t.preempted_jobs:
            continue
        hit = {id(r): r for _, r in killed}  # the glideins whose end killed a job
        lost = sum(r["canonical"].get("preemption_badput", 0.0) for r in hit.values())
        walls = [float(j["end"] - j["start"]) for j, _ in jobs if j.get("end") is not None and j.get("start") is not None]
        lives = [float(r["condor_end"] - r["condor_start"]) for r in recs
                 if r.get("condor_end") is not None and r.get("condor_start") is not None]
        evidence = {"jobs": len(jobs), "killed": len(killed), "killed_share": round(len(killed) / len(jobs), 3),
                    "median_job_s": statistics.median(walls) if walls else None,
                    "median_glidein_s": statistics.median(lives) if lives else None}
        hints.append(Hint(
            "preempted_jobs", {"entry": entry},
            f"{len(killed) / len(jobs):.0%} of the jobs at {entry} are killed by the glidein's end",
            "stop matching new jobs earlier, by more than a job's length (`GLIDEIN_Retire_Time`, "
            "`GLIDEIN_Retire_Time_Spread`), or run longer glideins (`GLIDEIN_Max_Walltime`, if the site allows)",
            lost / 3600.0 / days, evidence, _examples(hit.values()), len(hit)))
    return hints


def ce_waits(records: List[Record], t: Thresholds, days: float) -> List[Hint]:
    """Glideins waiting long at the CE: capacity asked for and not delivered."""
    everyone = [v for r in records for v in [ce_wait(r)] if v is not None]
    if not everyone:
        return []
    overall = statistics.median(everyone)
    hints = []
    for entry, values, median in _per_entry(records, t, ce_wait):
        if median < t.ce_wait or median < t.ce_wait_ratio * max(overall, 1.0):
            continue
        delay = sum(v * units(r) for v, r in values) / 3600.0
        hints.append(Hint(
            "ce_wait", {"entry": entry},
            f"glideins wait {median / 3600:.1f} h (median) at the CE of {entry}, {overall / 60:.0f} min elsewhere",
            "the site's batch system is full or the entry's limits are too high for it: lower the idle glideins "
            "the factory keeps at this entry (`max_per_entry` idle limits) and ask the site",
            delay / days, {"median_s": median, "median_all_entries_s": overall, "glideins": len(values),
                           "cost_is": "canonical hours requested but not running (not pilot time)"},
            _examples((r for _, r in values), order=lambda r: ce_wait(r) or 0.0), len(values)))
    return hints


def jobless_entries(records: List[Record], t: Thresholds, days: float) -> List[Hint]:
    """Entries whose glideins start HTCondor but mostly never get a job."""
    hints = []
    for entry, recs in _group(records, "entry").items():
        running = [r for r in recs if r.get("condor_start") is not None]
        empty = [r for r in running if not r.get("jobs")]
        if len(running) < t.min_glideins or len(empty) / len(running) < t.no_job_share:
            continue
        lost = sum(r["canonical"].get("decision_problem", 0.0) for r in empty) / 3600.0
        hints.append(Hint(
            "no_jobs", {"entry": entry},
            f"{len(empty) / len(running):.0%} of the glideins at {entry} never got a job",
            "check that the frontend's jobs can match this entry (its attributes, `GLIDEIN_Site`, the "
            "frontend's match expression and the job requirements) and stop requesting glideins for it until "
            "they can", lost / days, {"glideins": len(running), "without_jobs": len(empty)},
            _examples(empty), len(empty)))
    return hints


RULES = (failing_scripts, slow_scripts, slow_first_job, long_tails, preempted_jobs, ce_waits, jobless_entries)


def hints(records: Iterable[Record], thresholds: Optional[Thresholds] = None) -> List[Hint]:
    """Every hint the records support, most costly first."""
    t = thresholds or Thresholds()
    recs = [r for r in records if r.get("canonical") is not None]
    days = period_days(recs)
    found = [h for rule in RULES for h in rule(recs, t, days)]
    return sorted(found, key=lambda h: (-h.cost_hours_per_day, -h.count, h.kind))
