"""Glideins far out of their kind, and what sets a selection of glideins apart.

Outliers: per (entry, phase) the median and the MAD (median absolute
deviation) of log(1 + seconds). Log because waits and run times are
multiplicative (a script taking 10x longer is as odd at 5 s as at 500 s); the
median and MAD because, unlike the mean and standard deviation, the outliers
themselves cannot drag them. A glidein is listed when its robust z-score,
(log d - median) / (1.4826 MAD), is above a threshold (3.5, a common choice
for this score), in groups of at least ``min_n`` glideins (20): fewer, and a
"typical" value is not known well enough to call anything odd.

Compare (as Honeycomb's BubbleUp or Tempo's ``compare()``): for a selection
(failed glideins, or the slowest tenth in a phase) against the rest, each
attribute value's share in both; the values over-represented in the selection
are where to look first.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from typing import Any, Dict, Iterable, List, Optional, Tuple

from .hints import glidein_ref
from .phases import Record, phases

MIN_N = 20
THRESHOLD = 3.5
ATTRIBUTES = ("site", "entry", "frontend", "cpus", "failed_script")


def _phase_seconds(rec: Record) -> Dict[str, float]:
    """Seconds per phase name in one glidein (each script by its own name)."""
    out: Dict[str, float] = defaultdict(float)
    for phase in phases(rec):
        out[phase.name] += phase.seconds
    return out


def outliers(records: Iterable[Record], min_n: int = MIN_N, threshold: float = THRESHOLD) -> List[Dict[str, Any]]:
    """Glideins whose phase is far longer than the same phase at the same entry, farthest first."""
    groups: Dict[Tuple[str, str], List[Tuple[float, Record]]] = defaultdict(list)
    for rec in records:
        for name, seconds in _phase_seconds(rec).items():
            groups[(rec.get("entry") or "unknown", name)].append((seconds, rec))
    found = []
    for (entry, name), values in groups.items():
        if len(values) < min_n:
            continue
        logs = [math.log1p(v) for v, _ in values]
        median = statistics.median(logs)
        mad = statistics.median(abs(x - median) for x in logs)
        if mad == 0:
            continue  # (nearly) all the same: no scale to measure "far" with
        for (seconds, rec), x in zip(values, logs):
            score = (x - median) / (1.4826 * mad)
            if score > threshold:
                found.append({**glidein_ref(rec), "phase": name, "seconds": seconds, "n": len(values),
                              "median_seconds": round(math.expm1(median), 1), "score": round(score, 1)})
    return sorted(found, key=lambda row: -row["score"])


def select_slow(records: List[Record], phase: str) -> List[Record]:
    """The slowest tenth of the glideins that have ``phase`` (a name, or a kind like ``script``)."""
    timed = []
    for rec in records:
        seconds = sum(v for k, v in _phase_seconds(rec).items() if k == phase or k.split(":")[0] == phase)
        if seconds:
            timed.append((seconds, rec))
    timed.sort(key=lambda pair: pair[0], reverse=True)
    return [rec for _, rec in timed[:max(1, len(timed) // 10)]] if timed else []


def compare(selection: List[Record], baseline: List[Record], attributes: Iterable[str] = ATTRIBUTES,
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


def compare_spec(records: List[Record], spec: str) -> Tuple[Optional[str], List[Dict[str, Any]]]:
    """``failed`` or ``slow:PHASE`` -> (what the selection is, the comparison)."""
    if spec == "failed":
        chosen = [r for r in records if r.get("status") == "ERROR"]
        label = "failed glideins"
    elif spec.startswith("slow:") and spec[5:]:
        chosen = select_slow(records, spec[5:])
        label = f"the slowest tenth in {spec[5:]}"
    else:
        raise ValueError(f"--compare takes 'failed' or 'slow:PHASE' (e.g. slow:idle_tail), not {spec!r}")
    ids = {id(r) for r in chosen}
    return label, compare(chosen, [r for r in records if id(r) not in ids])
