"""``gwtrace account``: where pilot time went, in canonical hours, per time bucket.

Prints the six OSG pilot categories per bucket (and per site/entry/frontend
with ``--by``), the two site-side categories as not computable when there is
no demand data, and analyze_entries' totals for the same period.  ``--plot``
draws the series as a stacked area with matplotlib (the ``[factory]`` extra).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from collections import defaultdict
from typing import Any, Dict, List, Optional, TextIO, Tuple

from .account import BUCKETS, DEMAND_CATEGORIES, NOT_COMPUTABLE, EntryTotals, entries_totals, series
from .canonical import CATEGORIES
from .cli import add_record_options, open_store, select
from .collect import collect
from ..cli.terminal import terminal_text


def build_parser() -> argparse.ArgumentParser:
    """The options of ``gwtrace account``."""
    parser = argparse.ArgumentParser(prog="gwtrace account", description="Pilot time in canonical hours.")
    add_record_options(parser)
    parser.add_argument("--bucket", choices=sorted(BUCKETS), default="1d")
    parser.add_argument("--by", choices=("site", "entry", "frontend"))
    parser.add_argument("--format", choices=("table", "json", "csv"), default="table")
    parser.add_argument("--plot", metavar="FILE.svg|png", help="also draw the series (stacked area per category)")
    return parser


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


def render(rows: List[Dict[str, Any]], totals: Dict[str, Dict[str, Any]], fmt: str, by: Optional[str],
           out: TextIO) -> None:
    """Write the series and the totals as a table, JSON or CSV (CSV: the series only)."""
    if fmt == "json":
        json.dump({"unit": "canonical hours", "series": rows, "analyze_entries": totals,
                   "demand": {c: NOT_COMPUTABLE for c in DEMAND_CATEGORIES}}, out, indent=1)
        out.write("\n")
        return
    columns = ["bucket"] + ([by] if by else []) + list(CATEGORIES) + ["total"]
    if fmt == "csv":
        writer = csv.DictWriter(out, fieldnames=columns + list(DEMAND_CATEGORIES), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
        return
    _table(out, columns, [[str(r[c]) for c in columns] for r in rows])
    out.write(f"canonical hours (1 core + 2 GB); {', '.join(DEMAND_CATEGORIES)}: {NOT_COMPUTABLE}\n\n")
    head = ["group", "glideins", "time_h", "used_h", "validating_h", "idle_h", "wasted_h", "badput_h",
            "time_eff", "goodput_frac"]
    keys = ["glideins", "time", "time_used", "time_validating", "time_idle", "time_wasted", "badput",
            "time_efficiency", "goodput_fraction"]
    body = [[name] + [_cell(t[k], k) for k in keys] for name, t in totals.items()]
    out.write("analyze_entries totals (glideins that ended in the period; GlideinWMS's own per-glidein figures):\n")
    _table(out, head, body)
    if any(t["time_used"] > t["time"] for t in totals.values()):
        out.write("note: as in GlideinWMS >= 3.10.12, time used is core-summed while time is the pilots' wall time: "
                  "multi-core pilots push time used above time (efficiency > 1, negative idle/waste); the canonical "
                  "series above count cores and memory (docs/accounting.md)\n")


def _cell(value: Any, key: str) -> str:
    if value is None:
        return "-"
    if key in ("time_efficiency", "goodput_fraction"):
        return f"{value:.3f}"
    return str(value) if key == "glideins" else f"{value / 3600.0:.1f}"


def _table(out: TextIO, head: List[str], body: List[List[str]]) -> None:
    cells = [head] + body
    widths = [max(len(r[i]) for r in cells) for i in range(len(head))]
    for line in cells:
        out.write("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() + "\n")


def plot(rows: List[Dict[str, Any]], path: str, title: str, width: int) -> None:
    """A stacked area per category over time (all groups summed), SVG or PNG by the file's suffix."""
    from .account_plot import stacked_area  # matplotlib is imported only when a picture is asked for

    stacked_area(rows, path, title, width)


def from_files(args: argparse.Namespace) -> Tuple[List[Dict[str, Any]], Dict[str, Dict[str, Any]], List[str]]:
    """Series rows and totals straight from a factory's files."""
    found = collect(args.factory_logs)
    records = select(found.records, args)
    rows = rows_of(series(records, BUCKETS[args.bucket], args.by, args.since, args.until), args.by)
    return rows, entries_totals(records, args.by, args.since, args.until), found.errors + found.skipped


def from_store(args: argparse.Namespace) -> Tuple[List[Dict[str, Any]], Dict[str, Dict[str, Any]], List[str]]:
    """Series rows and totals from the store's records: SQLite sums the hourly cells kept at ingest."""
    filters = {"site": args.site, "entry": args.entry, "frontend": args.frontend}
    with open_store(args) as store:
        data = store.glidein_series(BUCKETS[args.bucket], args.by, args.since, args.until, **filters)
        groups: Dict[str, EntryTotals] = defaultdict(EntryTotals)
        for name, figures in store.glidein_gwms(args.by, args.since, args.until, **filters):
            groups[name].add(figures)
    return rows_of(data, args.by), {k: v.to_dict() for k, v in sorted(groups.items())}, []


def main(argv: Optional[List[str]] = None, stdout: Optional[TextIO] = None, stderr: Optional[TextIO] = None) -> int:
    """Run ``gwtrace account``; 0 if every file was read, 1 if some could not be (what was read is counted)."""
    stdout, stderr = stdout or sys.stdout, terminal_text(stderr or sys.stderr)
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.format == "table":
        stdout = terminal_text(stdout)          # worker text: control characters escaped (cli/terminal.py)
    if args.source:
        parser.error("--source: accounting needs each glidein's canonical segments, which only the store "
                     "(ingest the traces or the factory's files into it) or --factory-logs give")
    rows, totals, errors = from_files(args) if args.factory_logs else from_store(args)
    render(rows, totals, args.format, args.by, stdout)
    if args.plot:
        plot(rows, args.plot, f"pilot time by category, canonical hours per {args.bucket}", BUCKETS[args.bucket])
    for line in errors:
        stderr.write(f"gwtrace account: {line}\n")
    return 1 if errors else 0
