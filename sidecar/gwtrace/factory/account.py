"""Pilot time in canonical units as time series, and analyze_entries' totals.

Two views of the same glideins, on purpose side by side:

* ``series``: the six OSG pilot categories per time bucket, each glidein's
  canonical segments (``canonical.segments``: cut where jobs start and stop)
  split at bucket edges, so a glidein spanning buckets lands in each by time
  and the buckets of one glidein add up to its own totals;
* ``entries_totals``: what GlideinWMS's ``factory/tools/analyze_entries``
  prints for a period (glideins, time, used, validating, idle, wasted,
  badput, time efficiency, goodput fraction) from the per-glidein figures
  ``get_completed_stats`` gives, both exactly (sums over glideins) and as
  analyze_entries approximates validation and idle time from per-mille
  buckets (docs/accounting.md says where and why they differ).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Tuple

from .canonical import CATEGORIES, Segment
from .record import GlideinRecord

BUCKETS = {"1h": 3600, "1d": 86400}
NOT_COMPUTABLE = "not computable: no demand data"
#: the two site-side categories of the GIL report; they need frontend/factory demand data (idle jobs, pilots requested).
DEMAND_CATEGORIES = ("provisioning_bottleneck", "insufficient_demand")
#: GlideinWMS's per-mille ranges (getMillRange) and the fraction analyze_entries reads back from each label.
MILL_RANGES = ((2, "None"), (15, "5m"), (60, "25m"), (180, "100m"), (400, "250m"), (700, "500m"))
MILL_FRACTION = {"None": 0.0, "5m": 0.005, "25m": 0.025, "100m": 0.1, "250m": 0.25, "500m": 0.5, "Most": 0.75,
                 "All": 1.0}


def mill_range(mill: float) -> str:
    """The label GlideinWMS files a per-mille value under (``getMillRange``)."""
    for limit, label in MILL_RANGES:
        if mill < limit:
            return label
    return "All" if mill > 998 else "Most"


def group_of(rec: GlideinRecord, by: Optional[str]) -> str:
    """The value a glidein is grouped by (``site``, ``entry``, ``frontend``), or ``all``."""
    if by is None:
        return "all"
    return str(getattr(rec, by) or "unknown")


def series(records: Iterable[GlideinRecord], bucket: int, by: Optional[str] = None, since: Optional[float] = None,
           until: Optional[float] = None) -> Dict[Tuple[str, int], Dict[str, float]]:
    """Canonical CPU seconds per (group, bucket start) and category (all six, plus ``total``)."""
    cells: Dict[Tuple[str, int], List[float]] = {}
    for rec in records:
        accumulate(cells, group_of(rec, by), rec.segments, bucket, since, until)
    out = {}
    for key in sorted(cells):
        values = cells[key]
        row = dict(zip(CATEGORIES, values))
        row["total"] = sum(values)
        out[key] = row
    return out


_INDEX = {cat: i for i, cat in enumerate(CATEGORIES)}


def accumulate(cells: Dict[Tuple[str, int], List[float]], group: str, segs: Iterable[Segment], bucket: int,
               since: Optional[float], until: Optional[float]) -> None:
    """Add segments, cut at bucket edges and at the period, into ``cells`` (one list per group and bucket).

    The same arithmetic as ``canonical.split_buckets`` (a test holds them equal), in the shape that
    keeps 100 000 glideins' worth of segments fast: lists indexed by category, no dict per cell.
    """
    for seg in segs:
        lo = seg.start if since is None or seg.start > since else since
        hi = seg.end if until is None or seg.end < until else until
        if hi <= lo:
            continue
        shares = [(_INDEX[cat], units) for cat, units in seg.cpu.items()]
        index = int(lo // bucket)
        while lo < hi:
            edge = (index + 1) * bucket
            top = hi if hi < edge else edge
            key = (group, index * bucket)
            cell = cells.get(key)
            if cell is None:
                cell = cells[key] = [0.0] * len(CATEGORIES)
            width = top - lo
            for at, units in shares:
                cell[at] += units * width
            lo = top
            index += 1


@dataclass
class EntryTotals:
    """analyze_entries' figures for one group of glideins (seconds; GlideinWMS's own per-glidein inputs)."""

    glideins: int = 0
    failed_to_start: int = 0
    jobs: int = 0
    time: float = 0.0          # Lasted: sum of G (pilot wall time, not x cores)
    used: float = 0.0          # JobsLasted: sum of T (core-summed since 3.10.12)
    goodput: float = 0.0       # JobsGoodput
    validating: float = 0.0    # exact: sum of G * validation per-mille / 1000
    idle: float = 0.0          # exact: sum of G * idle per-mille / 1000 (per-mille against C, as GlideinWMS)
    validating_buckets: float = 0.0  # as analyze_entries approximates it from per-mille buckets
    idle_buckets: float = 0.0
    mill: Dict[str, Dict[str, float]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(float)))

    def add(self, gwms: Dict) -> None:
        """One glidein's ``get_completed_stats`` figures."""
        lasted = float(gwms.get("duration") or 0)
        jobs = gwms.get("jobs_duration") or {}
        waste = gwms.get("wastemill") or {}
        self.glideins += 1
        self.failed_to_start += 0 if gwms.get("condor_started") else 1
        self.jobs += int(gwms.get("jobsnr") or 0)
        self.time += lasted
        self.used += float(jobs.get("total") or 0)
        self.goodput += float(jobs.get("goodput") or 0)
        for kind in ("validation", "idle"):
            mill = float(waste.get(kind) or 0.0)
            exact, approx = lasted * mill / 1000.0, lasted * MILL_FRACTION[mill_range(mill)]
            if kind == "validation":
                self.validating, self.validating_buckets = self.validating + exact, self.validating_buckets + approx
            else:
                self.idle, self.idle_buckets = self.idle + exact, self.idle_buckets + approx

    def merge(self, other: "EntryTotals") -> None:
        """Add another group's sums (analyze_entries' all-entries totals are sums of the entries')."""
        for name in ("glideins", "failed_to_start", "jobs", "time", "used", "goodput", "validating", "idle",
                     "validating_buckets", "idle_buckets"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def to_dict(self) -> Dict[str, float]:
        """The figures analyze_entries prints, plus the exact/bucketed pair for validation and idle."""
        waste = self.time - self.used
        badput = self.time - self.goodput
        return {
            "glideins": self.glideins, "failed_to_start": self.failed_to_start, "jobs": self.jobs,
            "time": self.time, "time_used": self.used, "time_validating": self.validating,
            "time_validating_buckets": self.validating_buckets, "time_idle": self.idle,
            "time_idle_buckets": self.idle_buckets, "time_wasted": waste, "badput": badput,
            "time_efficiency": self.used / (waste + self.used) if waste + self.used else None,
            "goodput_fraction": (self.time - badput) / self.time if self.time else None,
        }


def entries_totals(records: Iterable[GlideinRecord], by: Optional[str] = None, since: Optional[float] = None,
                   until: Optional[float] = None) -> Dict[str, Dict[str, float]]:
    """analyze_entries' totals per group for the glideins that ended in [since, until) (completed in the period)."""
    groups: Dict[str, EntryTotals] = defaultdict(EntryTotals)
    for rec in records:
        end = rec.ended
        if end is not None and ((since is not None and end < since) or (until is not None and end >= until)):
            continue
        if rec.gwms:
            groups[group_of(rec, by)].add(rec.gwms)
    return {name: totals.to_dict() for name, totals in sorted(groups.items())}
