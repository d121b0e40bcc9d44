"""Statistics over glidein phases: per group and phase, per script and site, and per site and day.

What ``gwtrace analyze`` prints above the hints: where the time goes at each
entry (or site), which scripts fail where and with which messages, and
whether a site is getting worse.
"""

from __future__ import annotations

from array import array
from collections import Counter, defaultdict
from typing import Any, Dict, Iterable, List, Optional, Sequence

from .summary import ENDED, ENTRY, PHASES, SCRIPTS, SITE, STARTED, STATUS, UNITS, VALIDATION, Accumulator, Summary

DAY = 86400
#: phase kinds in the order of a glidein's life (the table's order)
ORDER = ("factory_queue", "ce_queue", "download", "script", "htcondor_start", "first_match", "running",
         "idle_between", "idle_tail", "cleanup", "unknown")
#: waiting in queues is not pilot time: no canonical hours for it (the CE wait hint counts it apart)
QUEUED = ("factory_queue", "ce_queue")


def quantile(values: Sequence[float], q: float) -> float:
    """The q-quantile by the nearest-rank rule (values need not be sorted)."""
    return quantiles(values, (q,))[0]


def quantiles(values: Sequence[float], qs: Sequence[float]) -> List[float]:
    """Several quantiles of the same values with one sort (nearest rank; 0.0 for no values)."""
    ordered = sorted(values)
    if not ordered:
        return [0.0] * len(qs)
    last = len(ordered) - 1
    return [ordered[min(last, max(0, int(q * len(ordered) + 0.5) - 1))] for q in qs]


class PhaseCells(Accumulator):
    """Per (group, phase kind): glideins with the phase, failures in it, their seconds, canonical seconds.

    Script phases are one kind here (``script``: all of a glidein's scripts); ``ScriptCells`` has them one
    by one.
    """

    def __init__(self, by: str = "entry") -> None:
        self.by = by
        self._at = SITE if by == "site" else ENTRY
        # group -> kind -> [seconds array, failed, canonical s, counts canonical hours]; nested, not keyed by
        # (group, kind): one lookup per glidein for the group, a string key per phase (~30% less time here)
        self.groups: Dict[str, Dict[str, List[Any]]] = {}

    def add(self, s: Summary) -> None:
        group = s[self._at] or "unknown"
        cells = self.groups.get(group)
        if cells is None:
            cells = self.groups[group] = {}
        units = s[UNITS]
        for kind, seconds, failed in s[PHASES]:
            cell = cells.get(kind)
            if cell is None:
                cell = cells[kind] = [array("d"), 0, 0.0, kind not in QUEUED]
            cell[0].append(seconds)
            if failed:
                cell[1] += 1
            if cell[3]:
                cell[2] += seconds * units

    def merge(self, later: "PhaseCells") -> None:
        for group, theirs in later.groups.items():
            cells = self.groups.setdefault(group, {})
            for kind, cell in theirs.items():
                mine = cells.get(kind)
                if mine is None:
                    cells[kind] = cell
                else:
                    mine[0].extend(cell[0])
                    mine[1] += cell[1]
                    mine[2] += cell[2]

    def lengths(self) -> Dict[str, List[float]]:
        """Each phase kind's seconds per glidein, all groups together (the histograms)."""
        out: Dict[str, List[float]] = defaultdict(list)
        for cells in self.groups.values():
            for kind, cell in cells.items():
                out[kind].extend(cell[0])
        return out

    def rows(self) -> List[Dict[str, Any]]:
        rank = {kind: i for i, kind in enumerate(ORDER)}
        out = []
        cells = [(group, kind, cell) for group, by_kind in self.groups.items() for kind, cell in by_kind.items()]
        for group, kind, (values, failed, canonical, _) in sorted(cells, key=lambda c: (c[0], rank.get(c[1], 99))):
            p50, p90, p99 = quantiles(values, (.5, .9, .99))
            out.append({self.by: group, "phase": kind, "glideins": len(values), "failed": failed,
                        "p50_s": p50, "p90_s": p90, "p99_s": p99,
                        "canonical_hours": None if kind in QUEUED else round(canonical / 3600, 2)})
        return out


def phase_table(records: Iterable[Any], by: str = "entry") -> List[Dict[str, Any]]:
    """Per (group, phase kind): glideins with the phase, failures in it, p50/p90/p99 seconds, canonical hours."""
    return PhaseCells(by).feed(records).rows()


class ScriptCells(Accumulator):
    """Per (script, site): runs, failures, seconds and the failure messages."""

    def __init__(self) -> None:
        self.cells: Dict[tuple, List[Any]] = {}    # (script, site) -> [seconds array, failed, Counter]

    def add(self, s: Summary) -> None:
        site = s[SITE] or "unknown"
        for script, seconds, failed, message in s[SCRIPTS]:
            cell = self.cells.get((script, site))
            if cell is None:
                cell = self.cells[(script, site)] = [array("d"), 0, Counter()]
            if seconds is not None:
                cell[0].append(seconds)
            if failed:
                cell[1] += 1
                cell[2][message or "(no message in the files)"] += 1

    def merge(self, later: "ScriptCells") -> None:
        for key, (seconds, failed, messages) in later.cells.items():
            cell = self.cells.get(key)
            if cell is None:
                self.cells[key] = [seconds, failed, messages]
            else:
                cell[0].extend(seconds)
                cell[1] += failed
                cell[2].update(messages)

    def rows(self) -> List[Dict[str, Any]]:
        out = []
        for (script, site), (seconds, failed, messages) in sorted(self.cells.items(), key=_script_key):
            runs = max(len(seconds), failed)
            out.append({"script": script, "site": site, "runs": runs, "failed": failed,
                        "failure_rate": round(failed / runs, 3) if runs else 0.0,
                        "p50_s": quantile(seconds, .5),
                        "messages": [{"message": m, "count": n} for m, n in messages.most_common(5)]})
        return out


def _script_key(item: Any) -> tuple:
    (script, site), _ = item
    return (script is None, script or "", site)


def script_table(records: Iterable[Any]) -> List[Dict[str, Any]]:
    """Per (script, site): runs, failures, failure rate, p50 seconds and the failure messages grouped."""
    return ScriptCells().feed(records).rows()


class TrendCells(Accumulator):
    """Per site and UTC day: glideins, failures, validation seconds."""

    def __init__(self) -> None:
        self.days: Dict[str, Dict[int, List[Any]]] = defaultdict(dict)  # site -> day -> [n, failed, seconds]

    def add(self, s: Summary) -> None:
        when = s[STARTED] if s[STARTED] is not None else s[ENDED]
        if when is None:
            return
        by_day = self.days[s[SITE] or "unknown"]
        day = int(when // DAY) * DAY
        cell = by_day.get(day)
        if cell is None:
            cell = by_day[day] = [0, 0, array("d")]
        cell[0] += 1
        cell[1] += s[STATUS] == "ERROR"
        if s[VALIDATION] is not None:
            cell[2].append(s[VALIDATION])

    def merge(self, later: "TrendCells") -> None:
        for site, by_day in later.days.items():
            mine = self.days[site]
            for day, (n, failed, seconds) in by_day.items():
                cell = mine.get(day)
                if cell is None:
                    mine[day] = [n, failed, seconds]
                else:
                    cell[0] += n
                    cell[1] += failed
                    cell[2].extend(seconds)

    def rows(self, min_glideins: int = 10, factor: float = 2.0, min_failures: int = 5) -> List[Dict[str, Any]]:
        out = []
        for site, by_day in sorted(self.days.items()):
            rows = [{"day": day, "glideins": n, "failed": failed, "failure_rate": round(failed / n, 3),
                     "validation_p50_s": quantile(seconds, .5) if seconds else None}
                    for day, (n, failed, seconds) in sorted(by_day.items())]
            out.append({"site": site, "days": rows, "worse": _worse(rows, min_glideins, factor, min_failures)})
        return out


def trends(records: Iterable[Any], min_glideins: int = 10, factor: float = 2.0,
           min_failures: int = 5) -> List[Dict[str, Any]]:
    """Per site and UTC day: glideins, failure rate, median validation time; a site whose last day's
    failure rate is ``factor`` times its earlier days' (with ``min_failures`` failures) is flagged."""
    return TrendCells().feed(records).rows(min_glideins, factor, min_failures)


def _worse(rows: List[Dict[str, Any]], min_glideins: int, factor: float, min_failures: int) -> Optional[str]:
    if len(rows) < 2:
        return None
    last, earlier = rows[-1], rows[:-1]
    before = sum(r["failed"] for r in earlier) / max(1, sum(r["glideins"] for r in earlier))
    if last["glideins"] >= min_glideins and last["failed"] >= min_failures and \
            last["failure_rate"] >= factor * max(before, 0.01):
        return f"failure rate {last['failure_rate']:.0%} on the last day against {before:.0%} before"
    return None
