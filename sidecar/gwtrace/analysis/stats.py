"""Statistics over glidein phases: per group and phase, per script and site, and per site and day.

What ``gwtrace analyze`` prints above the hints: where the time goes at each
entry (or site), which scripts fail where and with which messages, and
whether a site is getting worse.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Dict, Iterable, List, Optional

from .phases import Record, canonical_units, phases

DAY = 86400
#: phase kinds in the order of a glidein's life (the table's order)
ORDER = ("factory_queue", "ce_queue", "download", "script", "htcondor_start", "first_match", "running",
         "idle_between", "idle_tail", "cleanup", "unknown")
#: waiting in queues is not pilot time: no canonical hours for it (the CE wait hint counts it apart)
QUEUED = ("factory_queue", "ce_queue")


def quantile(values: List[float], q: float) -> float:
    """The q-quantile by the nearest-rank rule (values need not be sorted)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(q * len(ordered) + 0.5) - 1))] if ordered else 0.0


def phase_table(records: Iterable[Record], by: str = "entry") -> List[Dict[str, Any]]:
    """Per (group, phase kind): glideins with the phase, failures in it, p50/p90/p99 seconds, canonical hours.

    Script phases are one kind here (``script``: all of a glidein's scripts); ``script_table`` has them one
    by one.
    """
    cells: Dict[tuple, Dict[str, Any]] = defaultdict(lambda: {"seconds": [], "failed": 0, "canonical": 0.0})
    for rec in records:
        units = canonical_units(rec)
        per_kind: Dict[str, float] = defaultdict(float)
        failed = set()
        for phase in phases(rec):
            per_kind[phase.kind] += phase.seconds
            if phase.failed:
                failed.add(phase.kind)
        group = rec.get(by) or "unknown"
        for kind, seconds in per_kind.items():
            cell = cells[(group, kind)]
            cell["seconds"].append(seconds)
            cell["canonical"] += 0.0 if kind in QUEUED else seconds * units
            cell["failed"] += kind in failed
    rows = []
    rank = {kind: i for i, kind in enumerate(ORDER)}
    for (group, kind), cell in sorted(cells.items(), key=lambda item: (item[0][0], rank.get(item[0][1], 99))):
        values = cell["seconds"]
        rows.append({by: group, "phase": kind, "glideins": len(values), "failed": cell["failed"],
                     "p50_s": quantile(values, .5), "p90_s": quantile(values, .9), "p99_s": quantile(values, .99),
                     "canonical_hours": None if kind in QUEUED else round(cell["canonical"] / 3600, 2)})
    return rows


def script_table(records: Iterable[Record]) -> List[Dict[str, Any]]:
    """Per (script, site): runs, failures, failure rate, p50 seconds and the failure messages grouped."""
    cells: Dict[tuple, Dict[str, Any]] = defaultdict(lambda: {"seconds": [], "failed": 0, "messages": Counter()})
    for rec in records:
        for script in rec.get("scripts") or []:
            cell = cells[(script.get("id"), rec.get("site") or "unknown")]
            if script.get("start") is not None and script.get("end") is not None:
                cell["seconds"].append(script["end"] - script["start"])
            if script.get("status") == "ERROR":
                cell["failed"] += 1
                cell["messages"][script.get("detail") or "(no message in the files)"] += 1
    rows = []
    for (script, site), cell in sorted(cells.items()):
        runs = max(len(cell["seconds"]), cell["failed"])
        rows.append({"script": script, "site": site, "runs": runs, "failed": cell["failed"],
                     "failure_rate": round(cell["failed"] / runs, 3) if runs else 0.0,
                     "p50_s": quantile(cell["seconds"], .5),
                     "messages": [{"message": m, "count": n} for m, n in cell["messages"].most_common(5)]})
    return rows


def trends(records: Iterable[Record], min_glideins: int = 10, factor: float = 2.0,
           min_failures: int = 5) -> List[Dict[str, Any]]:
    """Per site and UTC day: glideins, failure rate, median validation time; a site whose last day's
    failure rate is ``factor`` times its earlier days' (with ``min_failures`` failures) is flagged."""
    days: Dict[str, Dict[int, Dict[str, Any]]] = defaultdict(lambda: defaultdict(
        lambda: {"glideins": 0, "failed": 0, "validation": []}))
    for rec in records:
        when = rec.get("started") if rec.get("started") is not None else rec.get("ended")
        if when is None:
            continue
        cell = days[rec.get("site") or "unknown"][int(when // DAY) * DAY]
        cell["glideins"] += 1
        cell["failed"] += rec.get("status") == "ERROR"
        scripts = [s for s in rec.get("scripts") or [] if s.get("end") is not None]
        if scripts and rec.get("started") is not None:
            cell["validation"].append(scripts[-1]["end"] - rec["started"])
    out = []
    for site, by_day in sorted(days.items()):
        ordered = sorted(by_day.items())
        rows = [{"day": day, "glideins": c["glideins"], "failed": c["failed"],
                 "failure_rate": round(c["failed"] / c["glideins"], 3),
                 "validation_p50_s": quantile(c["validation"], .5) if c["validation"] else None} for day, c in ordered]
        flag = _worse(rows, min_glideins, factor, min_failures)
        out.append({"site": site, "days": rows, "worse": flag})
    return out


def _worse(rows: List[Dict[str, Any]], min_glideins: int, factor: float, min_failures: int) -> Optional[str]:
    if len(rows) < 2:
        return None
    last, earlier = rows[-1], rows[:-1]
    before = sum(r["failed"] for r in earlier) / max(1, sum(r["glideins"] for r in earlier))
    if last["glideins"] >= min_glideins and last["failed"] >= min_failures and \
            last["failure_rate"] >= factor * max(before, 0.01):
        return f"failure rate {last['failure_rate']:.0%} on the last day against {before:.0%} before"
    return None
