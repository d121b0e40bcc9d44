"""Glideins far out of their kind, and what sets a selection of glideins apart.

Outliers: per (entry, phase) the median and the MAD (median absolute
deviation) of log(1 + seconds). Log because waits and run times are
multiplicative (a script taking 10x longer is as odd at 5 s as at 500 s); the
median and MAD because, unlike the mean and standard deviation, the outliers
themselves cannot drag them. A glidein is listed when its robust z-score,
(log d - median) / (1.4826 MAD), is above a threshold (3.5, a common choice
for this score), in groups of at least ``min_n`` glideins (20): fewer, and a
"typical" value is not known well enough to call anything odd.  And only when
the effect is worth a look: at least ``min_extra`` seconds (300) longer than
the group's median. A score alone flags a 12 s script where the median is 4 s,
which no operator would act on.

Compare (as Honeycomb's BubbleUp or Tempo's ``compare()``): for a selection
(failed glideins, or the slowest tenth in a phase) against the rest, each
attribute value's share in both; the values over-represented in the selection
are where to look first.
"""

from __future__ import annotations

import math
import statistics
from array import array
from collections import Counter
from typing import Any, Dict, Iterable, List, Optional, Tuple

from .hint_inputs import GlideinRefs, shifted
from .summary import CPUS, ENTRY, FAILED_SCRIPT, FRONTEND, PHASES, SITE, STATUS, Accumulator, Summary, as_summary, phase_names

MIN_N = 20
THRESHOLD = 3.5
MIN_EXTRA = 300.0   # seconds longer than the group's median, at least, for a row to be listed
ATTRIBUTES = ("site", "entry", "frontend", "cpus", "failed_script")


class OutlierGroups(Accumulator):
    """Seconds per (entry, phase name) and the glidein each came from, gathered in one pass (``add``)."""

    def __init__(self) -> None:
        self.refs = GlideinRefs()
        self.groups: Dict[Tuple[str, str], Tuple[array, array]] = {}

    def add(self, s: Summary) -> None:
        index = self.refs.add(s)
        entry = s[ENTRY] or "unknown"
        for name, seconds in phase_names(s):
            cell = self.groups.get((entry, name))
            if cell is None:
                cell = self.groups[(entry, name)] = (array("d"), array("l"))
            cell[0].append(seconds)
            cell[1].append(index)

    def merge(self, later: "OutlierGroups") -> None:
        shift = self.refs.merge(later.refs)
        for key, (values, index) in later.groups.items():
            cell = self.groups.get(key)
            if cell is None:
                self.groups[key] = (values, shifted(index, shift))
            else:
                cell[0].extend(values)
                cell[1].extend(shifted(index, shift))

    def found(self, min_n: int = MIN_N, threshold: float = THRESHOLD, min_extra: float = MIN_EXTRA
              ) -> List[Dict[str, Any]]:
        """Glideins whose phase is far longer than the same phase at the same entry (by the score) and
        at least ``min_extra`` seconds longer than its median (by the effect), farthest first."""
        found = []
        for (_, name), (values, index) in self.groups.items():
            if len(values) < min_n:
                continue
            logs = [math.log1p(v) for v in values]
            median = statistics.median(logs)
            mad = statistics.median(abs(x - median) for x in logs)
            if mad == 0:
                continue  # (nearly) all the same: no scale to measure "far" with
            typical = math.expm1(median)
            for seconds, at, x in zip(values, index, logs):
                score = (x - median) / (1.4826 * mad)
                if score > threshold and seconds - typical >= min_extra:
                    found.append({**self.refs.name(at), "phase": name, "seconds": seconds, "n": len(values),
                                  "median_seconds": round(typical, 1), "extra_seconds": round(seconds - typical, 1),
                                  "score": round(score, 1)})
        return sorted(found, key=lambda row: -row["score"])


def outliers(records: Iterable[Any], min_n: int = MIN_N, threshold: float = THRESHOLD,
             min_extra: float = MIN_EXTRA) -> List[Dict[str, Any]]:
    """Glideins whose phase is far longer than the same phase at the same entry, farthest first."""
    return OutlierGroups().feed(records).found(min_n, threshold, min_extra)


def _attributes(s: Summary) -> Dict[str, Any]:
    return {"site": s[SITE], "entry": s[ENTRY], "frontend": s[FRONTEND], "cpus": s[CPUS],
            "failed_script": s[FAILED_SCRIPT]}


def _phase_total(s: Summary, phase: str) -> float:
    """Seconds in ``phase`` (a name, or a kind like ``script``)."""
    if ":" not in phase:
        return next((seconds for kind, seconds, _ in s[PHASES] if kind == phase), 0)
    return sum(seconds for name, seconds in phase_names(s) if name == phase or name.split(":")[0] == phase)


def compare(selection: List[Dict[str, Any]], baseline: List[Dict[str, Any]], attributes: Iterable[str] = ATTRIBUTES,
            top: int = 10, min_count: int = 3) -> List[Dict[str, Any]]:
    """Attribute values over-represented in ``selection`` against ``baseline``, largest difference first."""
    if not selection or not baseline:
        return []
    rows = []
    for attr in attributes:
        mine = Counter(str(r.get(attr)) for r in selection)
        theirs = Counter(str(r.get(attr)) for r in baseline)
        for value, count in mine.items():
            if value == "None" or count < min_count:
                continue
            share, other = count / len(selection), theirs.get(value, 0) / len(baseline)
            if share > other:
                rows.append({"attribute": attr, "value": value, "selection_share": round(share, 3),
                             "baseline_share": round(other, 3), "difference": round(share - other, 3),
                             "selection_count": count})
    return sorted(rows, key=lambda row: -row["difference"])[:top]


def compare_spec(records: Iterable[Any], spec: str) -> Tuple[Optional[str], List[Dict[str, Any]]]:
    """``failed`` or ``slow:PHASE`` -> (what the selection is, the comparison), in one pass over the glideins.

    Each glidein is kept as its five attribute values (and its time in the phase), not as a record.
    """
    if spec == "failed":
        label = "failed glideins"
    elif spec.startswith("slow:") and spec[5:]:
        label = f"the slowest tenth in {spec[5:]}"
    else:
        raise ValueError(f"--compare takes 'failed' or 'slow:PHASE' (e.g. slow:idle_tail), not {spec!r}")
    rows: List[Tuple[float, int, Dict[str, Any]]] = []
    for at, item in enumerate(records):
        s = as_summary(item)
        key = float(s[STATUS] == "ERROR") if spec == "failed" else _phase_total(s, spec[5:])
        rows.append((key, at, _attributes(s)))
    if spec == "failed":
        chosen = {at for key, at, _ in rows if key}
    else:
        timed = sorted((r for r in rows if r[0]), key=lambda r: r[0], reverse=True)
        chosen = {at for _, at, _ in timed[:max(1, len(timed) // 10)]} if timed else set()
    selection = [attrs for _, at, attrs in rows if at in chosen]
    return label, compare(selection, [attrs for _, at, attrs in rows if at not in chosen])
