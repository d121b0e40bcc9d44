"""``gwtrace account``: where pilot time went, in canonical hours, per time bucket.

Prints the six OSG pilot categories per bucket (and per site/entry/frontend
with ``--by``) with a totals row, the two site-side categories as not
computable when there is no demand data, gwtrace's own figures (core-weighted
on both sides, ``figures.py``) and, beside them and labelled as GlideinWMS's,
analyze_entries' figures for the same period.  ``--plot`` draws the series as
a stacked area with matplotlib (the ``[factory]`` extra).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from collections import defaultdict
from typing import Any, Dict, List, Optional, TextIO, Tuple

from .account import BUCKETS, DEMAND_CATEGORIES, NOT_COMPUTABLE, EntryTotals, group_of, series
from .canonical import CATEGORIES
from .cli import add_record_options, open_store, select
from .collect import collect
from .figures import TOTAL, accounting_body, category_hours
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


def body_of(data: Dict[Tuple[str, int], Dict[str, float]], gwms: Dict[str, EntryTotals], by: Optional[str],
            extra: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The whole answer (``--format json``, the accounting page's API): series, totals, both sets of figures."""
    hours = category_hours(((group, cell) for (group, _start), cell in data.items()), grouped=by is not None)
    return accounting_body(rows_of(data, by), hours, gwms, extra, grouped=by is not None)


def render(body: Dict[str, Any], fmt: str, by: Optional[str], out: TextIO) -> None:
    """Write the answer as a table, JSON or CSV (CSV: the series, numbers only, and a totals row)."""
    rows = body["series"]
    if fmt == "json":
        json.dump(body, out, indent=1)
        out.write("\n")
        return
    columns = ["bucket"] + ([by] if by else []) + list(CATEGORIES) + ["total"]
    whole = body["groups"][-1]                      # category_hours puts the totals row last
    total_row = {"bucket": TOTAL, **({by: ""} if by else {}), **{c: whole[c] for c in CATEGORIES + ("total",)}}
    if fmt == "csv":
        # numbers only in numeric columns: the demand categories are not computable, so they are not columns
        writer = csv.DictWriter(out, fieldnames=columns + ["bucket_start"], extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
        writer.writerow({**total_row, "bucket": TOTAL, "bucket_start": ""})
        return
    _table(out, columns, [[str(r[c]) for c in columns] for r in rows + [total_row]])
    out.write(f"canonical hours (1 core + 2 GB); {', '.join(DEMAND_CATEGORIES)}: {NOT_COMPUTABLE}\n\n")
    render_figures(body, out)


OWN = (("pilot_hours", "pilot_h"), ("job_hours", "jobs_h"), ("goodput_hours", "goodput_h"),
       ("badput_hours", "badput_h"),
       ("validation_fail_hours", "val_fail_h"), ("idle_hours", "idle_h"), ("efficiency", "efficiency"),
       ("goodput_fraction", "goodput_frac"))
GWMS = (("glideins", "glideins"), ("time_h", "time_h"), ("time_used_h", "used_h"),
        ("time_validating_h", "validating_h"), ("time_idle_h", "idle_h"), ("time_wasted_h", "wasted_h"),
        ("badput_h", "badput_h"), ("time_efficiency", "time_eff"), ("goodput_fraction", "goodput_frac"))


def render_figures(body: Dict[str, Any], out: TextIO) -> None:
    """gwtrace's figures first, then GlideinWMS's, labelled, with the note on its >= 3.10.12 behaviour."""
    out.write("gwtrace figures (canonical core-hours inside the period, cores and memory counted on both sides; "
              "efficiency = jobs/pilot):\n")
    _table(out, ["group"] + [label for _, label in OWN],
           [[group] + [_cell(f[key]) for key, _ in OWN] for group, f in body["figures"].items()])
    gwms = body["glideinwms"]
    out.write("\nGlideinWMS's analyze_entries figures, as GlideinWMS computes them (glideins that ended in the "
              "period; hours):\n")
    if not gwms["groups"]:
        out.write("  none: no glidein ended in the period\n")
        return
    _table(out, ["group"] + [label for _, label in GWMS],
           [[group] + [_cell(t[key]) for key, _ in GWMS] for group, t in gwms["groups"].items()])
    if gwms["note"]:
        out.write(f"note: {gwms['note']}\n")


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    return str(value)


def _table(out: TextIO, head: List[str], body: List[List[str]]) -> None:
    cells = [head] + body
    widths = [max(len(r[i]) for r in cells) for i in range(len(head))]
    for line in cells:
        out.write("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() + "\n")


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
    body, rows, errors = from_files(args) if args.factory_logs else from_store(args)
    render(body, args.format, args.by, stdout)
    if args.plot:
        plot(rows, args.plot, f"pilot time by category, canonical hours per {args.bucket}", BUCKETS[args.bucket])
    for line in errors:
        stderr.write(f"gwtrace account: {line}\n")
    return 1 if errors else 0
