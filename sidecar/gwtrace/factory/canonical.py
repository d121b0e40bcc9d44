"""OSG accounting in canonical units (GIL report, 2022), per glidein.

Canonical unit: one CPU core with 2 GB of RAM; one GPU chip.  A glidein's
life is cut into segments in which the set of running jobs is constant; in
each, idle capacity counts as overhead only in whole canonical units (the
scarcer of idle cores and idle 2 GB), the rest of the pilot's capacity is
split among the running jobs in proportion to their size, and each job's
share goes to the category of the job.  docs/accounting.md gives the rules.
"""

import math
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

CATEGORIES = ("validation_fail", "decision_problem", "misconfig_badput", "goodput", "preemption_badput", "overhead")
GB = 1024.0
UNIT_MB = 2 * GB


@dataclass
class Interval:
    """One job as accounting sees it: when, how big, and which category it feeds."""

    start: float
    end: float
    cpus: float
    memory_mb: float
    gpus: float
    category: str


@dataclass
class Segment:
    """A stretch of constant allocation: canonical units per category (CPU and GPU)."""

    start: float
    end: float
    cpu: Dict[str, float] = field(default_factory=dict)
    gpu: Dict[str, float] = field(default_factory=dict)


def idle_units(idle_cores: float, idle_memory_mb: float) -> int:
    """Whole canonical units left idle: the scarcer of idle cores and idle 2 GB blocks."""
    return int(max(0.0, min(math.floor(idle_cores), math.floor(idle_memory_mb / UNIT_MB))))


def job_units(cpus: float, memory_mb: float) -> float:
    """Canonical size of a job or pilot: cores, or 2 GB blocks if memory is the larger claim."""
    return max(float(cpus), memory_mb / UNIT_MB)


def allocate(cpus: float, memory_mb: float, jobs: Sequence[Interval]) -> Dict[str, float]:
    """Canonical CPU units per category at one instant with ``jobs`` running."""
    pilot = job_units(cpus, memory_mb)
    if not jobs:
        return {"overhead": pilot}
    # Lists, not generators, and job_units inlined: called once per piece of every glidein's life
    # (80 pieces of 7 jobs each for a busy one). The same sums in the same order as before.
    used_cores = sum([j.cpus for j in jobs])
    used_mb = sum([j.memory_mb for j in jobs])
    overhead = min(float(idle_units(cpus - used_cores, memory_mb - used_mb)), pilot)
    sizes = [max(float(j.cpus), j.memory_mb / UNIT_MB) for j in jobs]
    total = sum(sizes)
    out = {"overhead": overhead}
    for job, size in zip(jobs, sizes):
        share = (pilot - overhead) * (size / total if total > 0 else 1.0 / len(jobs))
        out[job.category] = out.get(job.category, 0.0) + share
    return out


def allocate_gpu(gpus: float, jobs: Sequence[Interval]) -> Dict[str, float]:
    """GPU chips per category: each job keeps the chips it uses, idle chips are overhead."""
    if gpus <= 0:
        return {}
    out: Dict[str, float] = {}
    used = 0.0
    for job in jobs:
        take = min(job.gpus, gpus - used)
        if take > 0:
            out[job.category] = out.get(job.category, 0.0) + take
            used += take
    if gpus - used > 0:
        out["overhead"] = gpus - used
    return out


def segments(start: float, end: float, cpus: float, memory_mb: float, gpus: float,
             jobs: Iterable[Interval], empty_category: str = "overhead") -> List[Segment]:
    """Cut ``[start, end]`` where jobs start or stop and allocate each piece.

    ``empty_category`` receives the whole pilot when it ran no job at all
    (validation fail or decision problem); otherwise job-free time is overhead.
    """
    clipped = [j for j in jobs if min(j.end, end) > max(j.start, start)]
    if end <= start:
        return []
    if not clipped:
        cpu = {empty_category: job_units(cpus, memory_mb)}
        return [Segment(start, end, cpu, {empty_category: float(gpus)} if gpus > 0 else {})]
    cuts = sorted({start, end} | {min(max(t, start), end) for j in clipped for t in (j.start, j.end)})
    # A sweep, not a scan of every job per piece (a glidein of 40 jobs has 80 pieces): a job runs in
    # [lo, hi] when it started by lo and ends at hi or later, and once ended it never runs again.
    # The running jobs keep their order in ``clipped``, so every sum is the same as a scan's.
    by_start = sorted(range(len(clipped)), key=lambda i: clipped[i].start)
    active: List[int] = []
    out = []
    added = 0
    for lo, hi in zip(cuts, cuts[1:]):
        while added < len(by_start) and clipped[by_start[added]].start <= lo:
            active.append(by_start[added])
            added += 1
        active = sorted(i for i in active if clipped[i].end >= hi)
        running = [clipped[i] for i in active]
        out.append(Segment(lo, hi, allocate(cpus, memory_mb, running), allocate_gpu(gpus, running)))
    return out


def totals(segs: Iterable[Segment], kind: str = "cpu") -> Dict[str, float]:
    """Canonical seconds per category (all six present) and their ``total``."""
    out = dict.fromkeys(CATEGORIES, 0.0)
    for seg in segs:
        for cat, units in getattr(seg, kind).items():
            out[cat] += units * (seg.end - seg.start)
    out["total"] = sum(out[c] for c in CATEGORIES)
    return out


def split_buckets(segs: Iterable[Segment], bucket: float, kind: str = "cpu") -> Dict[int, Dict[str, float]]:
    """Canonical seconds per category per time bucket (``bucket`` seconds, epoch-aligned).

    Pure and additive: summing the buckets of every glidein gives the time
    series, and summing one glidein's buckets gives its ``totals``.
    """
    out: Dict[int, Dict[str, float]] = {}
    for seg in segs:
        lo = seg.start
        while lo < seg.end:
            key = int(math.floor(lo / bucket) * bucket)
            hi = min(seg.end, key + bucket)
            cell = out.setdefault(key, dict.fromkeys(CATEGORIES, 0.0))
            for cat, units in getattr(seg, kind).items():
                cell[cat] += units * (hi - lo)
            lo = hi
    return out


def pilot_bounds(start: Optional[float], end: Optional[float], duration: Optional[float]) -> Tuple[float, float]:
    """The pilot's accounted interval from what is known (missing start: end − duration)."""
    if end is None and start is not None:
        end = start + (duration or 0)
    if end is None:
        return 0.0, float(duration or 0)
    if start is None:
        start = end - (duration or 0)
    return float(start), float(end)
