"""``gwtrace account``: where pilot time went, in canonical hours, per time bucket, as a table, JSON or CSV.

Prints the six OSG pilot categories per bucket (and per site/entry/frontend
with ``--by``) with a totals row, the two site-side categories as not
computable when there is no demand data, gwtrace's own figures (core-weighted
on both sides, ``factory/figures.py``) and, beside them and labelled as GlideinWMS's,
analyze_entries' figures for the same period.  ``--plot`` draws the series as
a stacked area with matplotlib (the ``[factory]`` extra). The answer is made in
``gwtrace.factory.account_report``.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from typing import Any, Dict, List, Optional, TextIO

from gwtrace.cli.records import add_record_options, write_table
from gwtrace.cli.terminal import terminal_text
from gwtrace.factory.account import BUCKETS, DEMAND_CATEGORIES, NOT_COMPUTABLE
from gwtrace.factory.account_report import from_files, from_store, plot
from gwtrace.factory.canonical import CATEGORIES
from gwtrace.factory.figures import TOTAL


def build_parser() -> argparse.ArgumentParser:
    """The options of ``gwtrace account``."""
    parser = argparse.ArgumentParser(prog="gwtrace account", description="Pilot time in canonical hours.")
    add_record_options(parser)
    parser.add_argument("--bucket", choices=sorted(BUCKETS), default="1d")
    parser.add_argument("--by", choices=("site", "entry", "frontend"))
    parser.add_argument("--format", choices=("table", "json", "csv"), default="table")
    parser.add_argument("--plot", metavar="FILE.svg|png", help="also draw the series (stacked area per category)")
    return parser


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
    write_table(out, columns, [[str(r[c]) for c in columns] for r in rows + [total_row]])
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
    write_table(out, ["group"] + [label for _, label in OWN],
           [[group] + [_cell(f[key]) for key, _ in OWN] for group, f in body["figures"].items()])
    gwms = body["glideinwms"]
    out.write("\nGlideinWMS's analyze_entries figures, as GlideinWMS computes them (glideins that ended in the "
              "period; hours):\n")
    if not gwms["groups"]:
        out.write("  none: no glidein ended in the period\n")
        return
    write_table(out, ["group"] + [label for _, label in GWMS],
           [[group] + [_cell(t[key]) for key, _ in GWMS] for group, t in gwms["groups"].items()])
    if gwms["note"]:
        out.write(f"note: {gwms['note']}\n")


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    return str(value)


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
