"""Where pilot time went, in canonical hours, per time bucket: the answer of ``gwtrace account``
(printed by ``gwtrace.cli.account``) and of the accounting page's API (``body_of``).

The answer holds the six OSG pilot categories per bucket (and per site/entry/frontend
with ``--by``) with a totals row, the two site-side categories as not
computable when there is no demand data, gwtrace's own figures (core-weighted
on both sides, ``figures.py``) and, beside them and labelled as GlideinWMS's,
analyze_entries' figures for the same period.  ``--plot`` draws the series as
a stacked area with matplotlib (the ``[factory]`` extra).
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from typing import Any, Dict, List, Optional, Tuple

from .account import BUCKETS, DEMAND_CATEGORIES, NOT_COMPUTABLE, EntryTotals, group_of, series
from .canonical import CATEGORIES
from .selection import open_store, select
from .collect import collect
from .figures import accounting_body, category_hours


def _stamp(epoch: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(epoch))


def rows_of(data: Dict[Tuple[str, int], Dict[str, float]], by: Optional[str]) -> List[Dict[str, Any]]:
    """One row per (group, bucket), canonical hours rounded to 0.01."""
    rows = []
    for (group, start), cell in data.items():
        row: Dict[str, Any] = {"bucket": _stamp(start), "bucket_start": start}
        if by:
            row[by] = group
        row.update({cat: round(cell[cat] / 3600.0, 2) for cat in CATEGORIES + ("total",)})
        row.update(dict.fromkeys(DEMAND_CATEGORIES, NOT_COMPUTABLE))
        rows.append(row)
    return rows


def body_of(data: Dict[Tuple[str, int], Dict[str, float]], gwms: Dict[str, EntryTotals], by: Optional[str],
            extra: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The whole answer (``--format json``, the accounting page's API): series, totals, both sets of figures."""
    hours = category_hours(((group, cell) for (group, _start), cell in data.items()), grouped=by is not None)
    return accounting_body(rows_of(data, by), hours, gwms, extra, grouped=by is not None)


def plot(rows: List[Dict[str, Any]], path: str, title: str, width: int) -> None:
    """A stacked area per category over time (all groups summed), SVG or PNG by the file's suffix."""
    from .account_plot import stacked_area  # matplotlib is imported only when a picture is asked for

    stacked_area(rows, path, title, width)


def from_files(args: argparse.Namespace) -> Tuple[Dict[str, Any], List[Dict[str, Any]], List[str]]:
    """The answer straight from a factory's files (and the series rows, for the picture)."""
    found = collect(args.factory_logs)
    records = select(found.records, args)
    data = series(records, BUCKETS[args.bucket], args.by, args.since, args.until)
    gwms: Dict[str, EntryTotals] = defaultdict(EntryTotals)
    for rec in _ended_in(records, args.since, args.until):
        gwms[group_of(rec, args.by)].add(rec.gwms)
    body = body_of(data, gwms, args.by)
    return body, body["series"], found.errors + found.skipped


def _ended_in(records: Any, since: Optional[float], until: Optional[float]) -> Any:
    """The records analyze_entries counts: ended in [since, until), with GlideinWMS's figures."""
    for rec in records:
        end = rec.ended
        if end is not None and ((since is not None and end < since) or (until is not None and end >= until)):
            continue
        if rec.gwms:
            yield rec


def from_store(args: argparse.Namespace) -> Tuple[Dict[str, Any], List[Dict[str, Any]], List[str]]:
    """The answer from the store's records: SQLite sums the hourly cells kept at ingest."""
    filters = {"site": args.site, "entry": args.entry, "frontend": args.frontend}
    with open_store(args) as store:
        data = store.glidein_series(BUCKETS[args.bucket], args.by, args.since, args.until, **filters)
        groups: Dict[str, EntryTotals] = defaultdict(EntryTotals)
        for name, figures in store.glidein_gwms(args.by, args.since, args.until, **filters):
            groups[name].add(figures)
    body = body_of(data, groups, args.by)
    return body, body["series"], []
