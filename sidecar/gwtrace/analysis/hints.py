"""What an operator should change, ranked by what it costs.

Each rule looks at glidein records (``GlideinRecord.to_dict()`` dicts, from
factory files or from traces alike) grouped by the scope the fix applies to
(a site for a validation script, an entry for the factory knobs), and gives
a ``Hint`` only when a documented threshold is crossed by enough glideins:
the evidence names the glideins behind it, so every claim can be clicked
through.  The cost model (docs/analysis.md, "What a hint costs"):

* pilot time lost, in canonical core-hours per day: the pilot time the
  problem took (a failed glidein's whole life, the sleep GlideinWMS makes it
  do before it exits included; a slow script's extra seconds; an idle tail);
  the hints that cost it are ranked together, most costly first;
* glideins lost per day, beside it (failed validations);
* capacity requested but not running (a glidein waiting at the CE), in
  canonical core-hours per day too but not pilot time: ranked on its own,
  after the pilot-time hints, never mixed with them.

Every rate is over the glideins where the thing ran, and every "per day" is
over the period of the hint's own group (its site's or entry's glideins), so
an unrelated glidein cannot move it.  What the rules read is gathered once
per glidein by ``hint_inputs.HintInputs``.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from .hint_inputs import GlideinValues, HintInputs

FIRST_JOB, IDLE_TAIL, CE = range(3)  # the waits of a summary, in its order

#: the two units a hint's cost is in, each ranked on its own (PILOT first)
PILOT = "pilot_hours"
REQUESTED = "requested_hours"
OVERUSE = "overuse_hours"
UNITS = {PILOT: "canonical core-hours of pilot time lost per day",
         REQUESTED: "canonical core-hours requested but not running per day (not pilot time)",
         OVERUSE: "canonical core-hours used beyond what jobs requested per day (taken from other slots)"}
SHORT_UNITS = {PILOT: "pilot h/day", REQUESTED: "requested h/day, not running", OVERUSE: "over-request h/day"}


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
    # resource hints (analysis/resources.py), from the sidecars' samples
    resource_min_jobs: int = 1          # jobs of an owner over a request before a hint speaks
    memory_over_ratio: float = 1.0      # peak memory / request_memory above this
    cores_over: float = 0.5             # cores kept busy at least this many above request_cpus
    leak_min_points: int = 6            # RSS samples a leak needs (a line through 2 points always fits)
    leak_r2: float = 0.9                # how well RSS must fit a rising line
    leak_mb_per_hour: float = 50.0      # ... and how fast it must rise
    load_per_core: float = 1.5          # a node's mean 1-minute load / its cores at or above this
    load_min_points: int = 3            # load samples a glidein needs

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
    """One thing to change, why, what it costs (``cost_per_day`` in ``cost_unit``), and the glideins that show it."""

    kind: str
    scope: Dict[str, str]
    summary: str
    action: str
    cost_per_day: float
    evidence: Dict[str, Any]
    glideins: List[Dict[str, Any]] = field(default_factory=list)
    count: int = 0
    cost_unit: str = PILOT
    glideins_lost_per_day: float = 0.0
    period_days: float = 0.0
    rank: int = 0

    def to_dict(self) -> Dict[str, Any]:
        """JSON-ready, rounded for people; the unit spelled out beside the number."""
        out = asdict(self)
        out["cost_per_day"] = round(self.cost_per_day, 2)
        out["cost_unit_text"] = UNITS[self.cost_unit]
        out["glideins_lost_per_day"] = round(self.glideins_lost_per_day, 1)
        out["period_days"] = round(self.period_days, 3)
        return out



def failing_scripts(inputs: HintInputs, t: Thresholds) -> List[Hint]:
    """A validation script failing often at one site: fix the script or stop sending glideins there.

    The rate is over the site's glideins that ran the script (not all its glideins: a script run at one
    of two entries fails in 13 of its 20 runs, 65%, not 13 of 40); the cost is the failed glideins' whole
    pilot time, the sleep before exiting included, and the glideins lost.
    """
    hints = []
    for site, cell in inputs.sites.items():
        days = cell.period.days()
        for script, bad in cell.failed.items():
            ran = max(cell.ran.get(script, 0), len(bad))
            rate = len(bad) / ran
            if ran < t.min_glideins or len(bad) < t.script_failures or rate < t.script_failure_rate:
                continue
            lost_hours = cell.lost[script] / 3600.0
            hints.append(Hint(
                "failing_script", {"site": site, "script": script},
                f"{script} fails in {rate:.0%} of the glideins that run it at {site} ({len(bad)} of {ran}): "
                f"{len(bad) / days:.1f} glideins lost per day",
                f"fix {script} for {site}, or stop sending glideins there until it is fixed "
                "(remove the site from the frontend's match or disable its entries in the factory)",
                lost_hours / days,
                {"failures": len(bad), "glideins_that_ran_it": ran, "glideins_at_site": cell.glideins,
                 "failure_rate": round(rate, 3), "glideins_lost_per_day": round(len(bad) / days, 1),
                 "pilot_hours_per_failed_glidein": round(lost_hours / len(bad), 2)},
                inputs.refs.examples(bad), len(bad), PILOT, len(bad) / days, days))
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


def slow_scripts(inputs: HintInputs, t: Thresholds) -> List[Hint]:
    """A validation script much slower at some sites than everywhere else."""
    hints = []
    for script, by_site in inputs.runs.items():
        counts = {site: Counter(cell.values) for site, cell in by_site.items()}
        everywhere = sum(counts.values(), Counter())
        for site, cell in by_site.items():
            others = everywhere - counts[site]
            if len(cell) < t.min_glideins or sum(others.values()) < t.min_glideins:
                continue
            here, there = _median_of_counts(counts[site]), _median_of_counts(others)
            if here - there < t.slow_script_seconds or here < t.slow_script_ratio * max(there, 1.0):
                continue
            extra = sum(max(0.0, d - there) * inputs.refs.units[i] for d, i in zip(cell.values, cell.index)) / 3600.0
            days = inputs.sites[site].period.days()
            hints.append(Hint(
                "slow_script", {"site": site, "script": script},
                f"{script} takes {here:.0f} s (median) at {site}, {there:.0f} s elsewhere",
                f"find what {script} waits for at {site} (CVMFS, container image, local disk) or "
                "shorten its timeouts; the pilot holds its cores while it runs",
                extra / days, {"median_s": here, "median_elsewhere_s": there, "runs": len(cell)},
                inputs.refs.examples(cell.index, _per_glidein(cell)), len(cell), PILOT, 0.0, days))
    return hints


def _per_glidein(cell: GlideinValues) -> List[float]:
    """For each run, the seconds its glidein spent in all runs of the script (the examples' order)."""
    total: Dict[int, float] = defaultdict(float)
    for seconds, index in zip(cell.values, cell.index):
        total[index] += seconds
    return [total[index] for index in cell.index]


def _per_entry(inputs: HintInputs, t: Thresholds, which: int) -> Iterable[Tuple[str, GlideinValues, float]]:
    """(entry, its values of wait ``which``, their median) for entries with enough glideins where it is known."""
    for entry, cell in inputs.entries.items():
        values = cell.waits[which]
        if len(values) >= t.min_glideins:
            yield entry, values, statistics.median(values.values)


def _cost(inputs: HintInputs, values: GlideinValues) -> float:
    """The canonical hours of a wait summed over the glideins that waited."""
    units = inputs.refs.units
    return sum(v * units[i] for v, i in zip(values.values, values.index)) / 3600.0


def _waits(inputs: HintInputs, t: Thresholds, kind: str, which: int, threshold: float, summary: str,
           action: str) -> List[Hint]:
    """Entries whose median wait ``which`` is at least ``threshold``: the wait, in canonical hours, is the cost."""
    hints = []
    for entry, values, median in _per_entry(inputs, t, which):
        if median < threshold:
            continue
        days = inputs.entries[entry].period.days()
        hints.append(Hint(kind, {"entry": entry}, summary.format(entry=entry, minutes=median / 60), action,
                          _cost(inputs, values) / days, {"median_s": median, "glideins": len(values)},
                          inputs.refs.examples(values.index, values.values), len(values), PILOT, 0.0, days))
    return hints


def slow_first_job(inputs: HintInputs, t: Thresholds) -> List[Hint]:
    """Glideins waiting long for their first job: too many idle glideins requested for the demand."""
    return _waits(inputs, t, "first_job_wait", FIRST_JOB, t.first_job_wait,
                  "glideins at {entry} wait {minutes:.0f} min (median) for their first job",
                  "request fewer idle glideins for this entry (frontend `idle_glideins_per_entry`, "
                  "`max_idle`) or let them give up sooner (`GLIDEIN_Max_Idle`)")


def long_tails(inputs: HintInputs, t: Thresholds) -> List[Hint]:
    """Glideins idling long after their last job before they end."""
    return _waits(inputs, t, "idle_tail", IDLE_TAIL, t.idle_tail,
                  "glideins at {entry} stay {minutes:.0f} min (median) idle after their last job",
                  "shorten the idle tail: `GLIDEIN_Max_Tail` (seconds a glidein waits for a new job once it has "
                  "run one)")


def preempted_jobs(inputs: HintInputs, t: Thresholds) -> List[Hint]:
    """Jobs killed by the glidein's end: retire earlier or run longer glideins."""
    hints = []
    for entry, cell in inputs.entries.items():
        if cell.glideins < t.min_glideins or not cell.jobs or cell.killed / cell.jobs < t.preempted_jobs:
            continue
        evidence = {"jobs": cell.jobs, "killed": cell.killed, "killed_share": round(cell.killed / cell.jobs, 3),
                    "median_job_s": statistics.median(cell.walls) if cell.walls else None,
                    "median_glidein_s": statistics.median(cell.lives) if cell.lives else None}
        days = cell.period.days()
        hints.append(Hint(
            "preempted_jobs", {"entry": entry},
            f"{cell.killed / cell.jobs:.0%} of the jobs at {entry} are killed by the glidein's end",
            "stop matching new jobs earlier, by more than a job's length (`GLIDEIN_Retire_Time`, "
            "`GLIDEIN_Retire_Time_Spread`), or run longer glideins (`GLIDEIN_Max_Walltime`, if the site allows)",
            cell.lost / 3600.0 / days, evidence, inputs.refs.examples(cell.hit), len(cell.hit), PILOT, 0.0, days))
    return hints


def ce_waits(inputs: HintInputs, t: Thresholds) -> List[Hint]:
    """Glideins waiting long at the CE: capacity asked for and not delivered (not pilot time: ranked apart)."""
    if not inputs.ce_everyone:
        return []
    overall = statistics.median(inputs.ce_everyone)
    hints = []
    for entry, values, median in _per_entry(inputs, t, CE):
        if median < t.ce_wait or median < t.ce_wait_ratio * max(overall, 1.0):
            continue
        days = inputs.entries[entry].period.days()
        hints.append(Hint(
            "ce_wait", {"entry": entry},
            f"glideins wait {median / 3600:.1f} h (median) at the CE of {entry}, {overall / 60:.0f} min elsewhere",
            "the site's batch system is full or the entry's limits are too high for it: lower the idle glideins "
            "the factory keeps at this entry (`max_per_entry` idle limits) and ask the site",
            _cost(inputs, values) / days, {"median_s": median, "median_all_entries_s": overall,
                                           "glideins": len(values)},
            inputs.refs.examples(values.index, values.values), len(values), REQUESTED, 0.0, days))
    return hints


def jobless_entries(inputs: HintInputs, t: Thresholds) -> List[Hint]:
    """Entries whose glideins start HTCondor but mostly never get a job (the rate is over those that started it)."""
    hints = []
    for entry, cell in inputs.entries.items():
        if cell.running < t.min_glideins or len(cell.empty) / cell.running < t.no_job_share:
            continue
        days = cell.period.days()
        hints.append(Hint(
            "no_jobs", {"entry": entry},
            f"{len(cell.empty) / cell.running:.0%} of the glideins at {entry} never got a job",
            "check that the frontend's jobs can match this entry (its attributes, `GLIDEIN_Site`, the "
            "frontend's match expression and the job requirements) and stop requesting glideins for it until "
            "they can", cell.empty_lost / 3600.0 / days, {"glideins": cell.running, "without_jobs": len(cell.empty)},
            inputs.refs.examples(cell.empty), len(cell.empty), PILOT, 0.0, days))
    return hints


RULES = (failing_scripts, slow_scripts, slow_first_job, long_tails, preempted_jobs, ce_waits, jobless_entries)


def ranked(inputs: HintInputs, thresholds: Optional[Thresholds] = None) -> List[Hint]:
    """Every hint the gathered glideins support: the pilot-time ones most costly first (glideins lost breaking
    ties), then the requested-but-not-running ones, ranked on their own; ``rank`` counts within each unit."""
    t = thresholds or Thresholds()
    return rank([h for rule in RULES for h in rule(inputs, t)])


def rank(found: List[Hint]) -> List[Hint]:
    """Hints in the order of ``UNITS``, each unit most costly first, ``rank`` counted within it."""
    out: List[Hint] = []
    for unit in UNITS:
        mine = sorted((h for h in found if h.cost_unit == unit),
                      key=lambda h: (-h.cost_per_day, -h.glideins_lost_per_day, -h.count, h.kind))
        for n, hint in enumerate(mine, 1):
            hint.rank = n
        out.extend(mine)
    return out


def rank_dicts(found: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """``rank`` for hints already in their JSON form (``Hint.to_dict``): the server adds the resource hints so."""
    out: List[Dict[str, Any]] = []
    for unit in UNITS:
        mine = sorted((h for h in found if h["cost_unit"] == unit),
                      key=lambda h: (-h["cost_per_day"], -h["glideins_lost_per_day"], -h["count"], h["kind"]))
        for n, hint in enumerate(mine, 1):
            hint["rank"] = n
        out.extend(mine)
    return out


def hints(records: Iterable[Any], thresholds: Optional[Thresholds] = None) -> List[Hint]:
    """Every hint the records (or summaries) support, most costly first."""
    return ranked(HintInputs().feed(records), thresholds)
