"""The accounting figures an operator reads first, and GlideinWMS's beside them, in hours.

Two sets of figures, on purpose apart and labelled:

* gwtrace's own (``own_figures``): from the canonical series, so cores and
  memory are counted the same way on both sides of every ratio. Pilot time
  is the pilots' canonical core-hours; job time is the part of it the jobs
  held; idle is what was left; so nothing is negative and the efficiency is
  at most 1. They cover the time inside the period (a glidein spanning its
  edge counts the part inside).
* GlideinWMS's ``analyze_entries`` figures (``gwms_hours``): what the factory
  tool prints, computed from GlideinWMS's own per-glidein figures, for the
  glideins that *ended* in the period. Since GlideinWMS 3.10.12 its "time
  used" (JobsLasted) is summed over the cores the jobs used while "time"
  (Lasted) stays the pilots' wall time, so on multi-core pilots used exceeds
  time: waste and idle come out negative and the time efficiency above 1
  (``GWMS_NOTE`` says it where the figures are shown; docs/accounting.md).
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, Mapping, Optional, Tuple

from .account import DEMAND_CATEGORIES, NOT_COMPUTABLE, EntryTotals
from .canonical import CATEGORIES

#: the categories in which the pilot's capacity was held by user jobs
JOB_CATEGORIES = ("goodput", "misconfig_badput", "preemption_badput")
#: pilot time with no job: never matched, or between and after jobs
IDLE_CATEGORIES = ("decision_problem", "overhead")
TOTAL = "total"   # the name of the totals row (a group cannot be named this: groups are prefixed if so)

UNITS = {
    "series": "canonical core-hours (1 core + 2 GB; a GPU chip apart)",
    "figures": "canonical core-hours; efficiency and goodput_fraction are ratios of them (at most 1)",
    "glideinwms": "hours; time is the pilots' wall time, used is the jobs' core-hours (GlideinWMS >= 3.10.12)",
}
GWMS_NOTE = ("GlideinWMS >= 3.10.12 sums job time over the cores the jobs used (JobsLasted, from the "
             "'(Real) Total' of parse_starterlog) but keeps the pilot's time as wall time (Lasted, not times "
             "cores): on multi-core pilots 'used' exceeds 'time', so 'wasted' = time - used and 'idle' "
             "(per glidein G x (C - T)/C, T core-summed) come out negative and 'time efficiency' = used/time "
             "is about the number of busy cores, not a share. gwtrace's figures count cores on both sides.")

_SECONDS = ("time", "time_used", "time_validating", "time_validating_buckets", "time_idle", "time_idle_buckets",
            "time_wasted", "badput")


def category_hours(cells: Iterable[Tuple[str, Mapping[str, float]]], grouped: bool = True
                   ) -> Dict[str, Dict[str, float]]:
    """Canonical hours per group and category (``(group, seconds per category)`` pairs, e.g. the series'
    cells), and a ``total`` row over every group, last (alone when not ``grouped``); unrounded."""
    out: Dict[str, Dict[str, float]] = {}
    keys = CATEGORIES + ("total",)
    whole = dict.fromkeys(keys, 0.0)
    for group, cell in cells:
        acc = out.setdefault(group, dict.fromkeys(keys, 0.0))
        for key in keys:
            hours = cell.get(key, 0.0) / 3600.0
            acc[key] += hours
            whole[key] += hours
    out = {(g if g != TOTAL else f"{g} (group)"): v for g, v in sorted(out.items())} if grouped else {}
    out[TOTAL] = whole
    return out


def own_figures(hours: Mapping[str, float]) -> Dict[str, Any]:
    """gwtrace's figures for one group from its canonical hours per category (see the module's docstring)."""
    pilot = hours.get("total", 0.0)
    jobs = sum(hours.get(c, 0.0) for c in JOB_CATEGORIES)
    goodput = hours.get("goodput", 0.0)
    return {
        "pilot_hours": round(pilot, 2), "job_hours": round(jobs, 2), "goodput_hours": round(goodput, 2),
        "badput_hours": round(jobs - goodput, 2), "validation_fail_hours": round(hours.get("validation_fail", 0.0), 2),
        "idle_hours": round(sum(hours.get(c, 0.0) for c in IDLE_CATEGORIES), 2),
        "efficiency": round(jobs / pilot, 3) if pilot > 0 else None,
        "goodput_fraction": round(goodput / pilot, 3) if pilot > 0 else None,
    }


def figures_of(hours_by_group: Mapping[str, Mapping[str, float]]) -> Dict[str, Dict[str, Any]]:
    """``own_figures`` for every group of ``category_hours`` (the totals row included, last)."""
    return {group: own_figures(hours) for group, hours in hours_by_group.items()}


def gwms_hours(totals: Mapping[str, Any]) -> Dict[str, Any]:
    """One group's analyze_entries figures (``EntryTotals.to_dict``, seconds) in hours: ``time`` ->
    ``time_h`` and so on; counts and ratios as they are."""
    out: Dict[str, Any] = {}
    for key, value in totals.items():
        if key in _SECONDS:
            out[f"{key}_h"] = round(value / 3600.0, 2)
        elif key in ("time_efficiency", "goodput_fraction"):
            out[key] = None if value is None else round(value, 3)
        else:
            out[key] = value
    out["used_exceeds_time"] = totals.get("time_used", 0) > totals.get("time", 0)
    return out


def glideinwms_block(groups: Mapping[str, EntryTotals], grouped: bool = True) -> Dict[str, Any]:
    """GlideinWMS's figures per group and a totals row, in hours, labelled, with the note when it applies."""
    whole = EntryTotals()
    for totals in groups.values():
        whole.merge(totals)
    rows = {(g if g != TOTAL else f"{g} (group)"): gwms_hours(t.to_dict())
            for g, t in sorted(groups.items())} if grouped else {}
    if groups:
        rows[TOTAL] = gwms_hours(whole.to_dict())
    block: Dict[str, Any] = {
        "source": "GlideinWMS factory/tools/analyze_entries, from GlideinWMS's per-glidein figures "
                  "(get_completed_stats), for the glideins that ended in the period",
        "unit": UNITS["glideinwms"], "groups": rows, "note": None,
    }
    if any(r["used_exceeds_time"] for r in rows.values()):
        block["note"] = GWMS_NOTE
    return block


def accounting_body(series_rows: Any, hours: Mapping[str, Mapping[str, float]],
                    gwms_groups: Mapping[str, EntryTotals], extra: Optional[Dict[str, Any]] = None,
                    grouped: bool = True) -> Dict[str, Any]:
    """What ``gwtrace account --format json`` and ``/ui/api/accounting`` answer: every unit said."""
    return {
        **(extra or {}), "units": UNITS, "series": series_rows,
        "groups": [{"group": g, **{k: round(v, 2) for k, v in cells.items()}} for g, cells in hours.items()],
        "figures": figures_of(hours), "glideinwms": glideinwms_block(gwms_groups, grouped),
        "demand": {c: NOT_COMPUTABLE for c in DEMAND_CATEGORIES},
    }
