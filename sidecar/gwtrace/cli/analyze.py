"""``gwtrace analyze``: where glidein time goes, per entry or site and phase, and the ranked hints.

Records come from the store (``gwtrace ingest --factory-logs`` fills it) or
straight from a factory's client log directories (``--factory-logs``), as for
``gwtrace glideins``; the filters mean what they mean there. The analysis is
``gwtrace.analysis.report``; this module reads the options and prints.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List, Optional, TextIO

from gwtrace.analysis.fold import default_workers, fold
from gwtrace.analysis.hints import SHORT_UNITS, UNITS, Hint, Thresholds, rank
from gwtrace.analysis.outliers import MIN_EXTRA, MIN_N, THRESHOLD, OutlierGroups, compare_spec
from gwtrace.analysis.report import folded
from gwtrace.cli.records import add_record_options, write_table
from gwtrace.cli.terminal import terminal_text
from gwtrace.analysis.selection import load_summaries, open_store, summary_parts
from gwtrace.gcpause import gc_paused


def build_parser() -> argparse.ArgumentParser:
    """The options of ``gwtrace analyze``."""
    parser = argparse.ArgumentParser(prog="gwtrace analyze", description="Where glidein time goes, and what to change.")
    add_record_options(parser)
    parser.add_argument("--by", choices=("entry", "site"), default="entry", help="group the phases by (default entry)")
    parser.add_argument("--hints", action="store_true", help="only the ranked hints")
    parser.add_argument("--outliers", action="store_true",
                        help="list glideins far out in a phase at their entry (robust z-score on log duration)")
    parser.add_argument("--min-extra", type=float, default=MIN_EXTRA, metavar="SECONDS",
                        help=f"--outliers: only glideins at least this much longer than their entry's median "
                             f"(default {MIN_EXTRA:.0f} s)")
    parser.add_argument("--top", type=int, default=30, metavar="N", help="--outliers: rows printed (default 30)")
    parser.add_argument("--compare", metavar="failed|slow:PHASE",
                        help="which attribute values are over-represented in failed (or slow) glideins")
    parser.add_argument("--threshold", action="append", default=[], metavar="NAME=VALUE",
                        help="change a hint threshold (docs/analysis.md lists them)")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--plot", metavar="DIR", help="also draw the charts into DIR (matplotlib)")
    parser.add_argument("--plot-format", choices=("svg", "png"), default="svg")
    parser.add_argument("--workers", type=int, default=default_workers(), metavar="N",
                        help="read the store in N parts side by side (default: the usable CPUs, at most 4)")
    return parser


def _minutes(seconds: Optional[float]) -> str:
    return "-" if seconds is None else f"{seconds / 60:.1f}"


def render_report(report: Dict[str, Any], by: str, out: TextIO) -> None:
    """The phases, the failing scripts and the flagged sites, as text (minutes)."""
    out.write(f"phases per {by} (minutes per glidein; canonical hours in total, none for time in queues):\n")
    write_table(out, [by, "phase", "glideins", "failed", "p50", "p90", "p99", "canon_h"],
           [[r[by], r["phase"], str(r["glideins"]), str(r["failed"]), _minutes(r["p50_s"]), _minutes(r["p90_s"]),
             _minutes(r["p99_s"]), "-" if r["canonical_hours"] is None else str(r["canonical_hours"])]
            for r in report["phases"]])
    failing = [r for r in report["scripts"] if r["failed"]]
    out.write("\nfailing scripts by site:\n" if failing else "\nfailing scripts: none\n")
    if failing:
        write_table(out, ["script", "site", "runs", "failed", "rate", "most common message"],
               [[r["script"], r["site"], str(r["runs"]), str(r["failed"]), f"{r['failure_rate']:.0%}",
                 f"{r['messages'][0]['message'][:60]} ({r['messages'][0]['count']})"] for r in failing])
    worse = [t for t in report["trends"] if t["worse"]]
    out.write("\ngetting worse: " + ("; ".join(f"{t['site']}: {t['worse']}" for t in worse) if worse else "no site")
              + "\n\n")


#: the hints whose evidence is jobs, not glideins (analysis/resources.py)
JOB_HINTS = ("memory_over_request", "cores_over_request", "memory_leak")


def with_resource_hints(args: argparse.Namespace, found: List[Hint], thresholds: Thresholds) -> List[Hint]:
    """The glidein hints and, from a store, the resource hints of the sidecars' samples, ranked together per unit
    (records read from factory files or a Jaeger source have no samples)."""
    if args.factory_logs or getattr(args, "source", None):
        return found
    from gwtrace.analysis.resources import resource_hints

    with open_store(args) as store:
        extra = resource_hints(store, thresholds, since=args.since, until=args.until, site=args.site)
    return rank(found + extra) if extra else found


def render_hints(found: List[Hint], out: TextIO) -> None:
    """The ranked hints, each with its cost, action and evidence: pilot time lost first, then, ranked on
    their own, capacity requested but not running (a CE wait is not pilot time)."""
    if not found:
        out.write("hints: none (no threshold crossed; docs/analysis.md lists them)\n")
    unit = None
    for hint in found:
        if hint.cost_unit != unit:
            unit = hint.cost_unit
            out.write(f"{'' if hint is found[0] else chr(10)}ranked by {UNITS[unit]}:\n")
        lost = f", {hint.glideins_lost_per_day:.1f} glideins lost/day" if hint.glideins_lost_per_day else ""
        noun = "jobs" if hint.kind in JOB_HINTS else "glideins"
        out.write(f"{hint.rank}. [{hint.cost_per_day:.1f} {SHORT_UNITS[unit]}{lost}] {hint.summary}\n"
                  f"   do: {hint.action}\n"
                  f"   evidence: {json.dumps(hint.evidence)}; {hint.count} {noun} over {hint.period_days:.1f} "
                  f"days, e.g. {', '.join(g['glidein'] for g in hint.glideins[:3])}"
                  + (f" (trace {hint.glideins[0]['trace_id']})" if hint.glideins[0].get("trace_id") else "") + "\n")


def render_outliers(found: List[Dict[str, Any]], out: TextIO, top: int = 30, min_extra: float = MIN_EXTRA) -> None:
    """The farthest glideins first, with the group's median and the robust z-score; says when rows are cut."""
    shown = found[:top]
    out.write(f"{len(found)} outliers (robust z-score > {THRESHOLD} on log duration, groups of >= {MIN_N} glideins, "
              f"at least {min_extra:.0f} s longer than the entry's median)"
              + (f"; {len(shown)} of {len(found)} shown (--top)" if len(shown) < len(found) else "") + "\n")
    if not shown:
        return
    write_table(out, ["glidein", "entry", "phase", "minutes", "entry median", "extra", "score", "trace"],
           [[r["glidein"], str(r["entry"]), r["phase"], _minutes(r["seconds"]), _minutes(r["median_seconds"]),
             _minutes(r["extra_seconds"]), str(r["score"]), r["trace_id"]] for r in shown])


def render_compare(label: Optional[str], rows: List[Dict[str, Any]], out: TextIO) -> None:
    """Each over-represented value with its share in the selection and in the rest."""
    out.write(f"over-represented in {label} (share in them / share in the rest):\n")
    write_table(out, ["attribute", "value", "selection", "rest", "difference"],
           [[r["attribute"], r["value"], f"{r['selection_share']:.0%}", f"{r['baseline_share']:.0%}",
             f"{r['difference']:+.0%}"] for r in rows])


def _emit(fmt: str, body: Dict[str, Any], stdout: TextIO, text: Any, errors: List[str], stderr: TextIO) -> int:
    if fmt == "json":
        json.dump(body, stdout, indent=1)
        stdout.write("\n")
    else:
        text()
    for line in errors:
        stderr.write(f"gwtrace analyze: {line}\n")
    return 1 if errors else 0


def main(argv: Optional[List[str]] = None, stdout: Optional[TextIO] = None, stderr: Optional[TextIO] = None) -> int:
    """Run ``gwtrace analyze``; 0 if every file was read, 1 if some could not be (what was read is analysed)."""
    stdout, stderr = stdout or sys.stdout, terminal_text(stderr or sys.stderr)
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.format != "json":
        stdout = terminal_text(stdout)          # worker text: control characters escaped (cli/terminal.py)
    try:
        thresholds = Thresholds.parse(args.threshold)
    except ValueError as exc:
        parser.error(str(exc))
    if args.workers < 1:
        parser.error("--workers takes a number of processes, 1 or more")
    if args.top < 1 or args.min_extra < 0:
        parser.error("--top takes 1 or more rows, --min-extra 0 or more seconds")
    if args.compare is not None:
        summaries, errors = load_summaries(args)
        try:
            with gc_paused():
                label, rows = compare_spec(summaries, args.compare)
        except ValueError as exc:
            parser.error(str(exc))
        return _emit(args.format, {"compare": {"selection": label, "values": rows}}, stdout,
                     lambda: render_compare(label, rows, stdout), errors, stderr)
    parts, errors = summary_parts(args, args.workers)
    if args.outliers:
        with gc_paused():
            found = fold(parts, lambda: (OutlierGroups(),))[0].found(min_extra=args.min_extra)
        return _emit(args.format, {"outliers": found, "min_extra_s": args.min_extra}, stdout,
                     lambda: render_outliers(found, stdout, args.top, args.min_extra), errors, stderr)
    report, ranked, lengths = folded(parts, args.by, thresholds, full=not args.hints or bool(args.plot))
    ranked = with_resource_hints(args, ranked, thresholds)
    if args.plot:
        from gwtrace.analysis.plots import plot_all

        for path in plot_all({**report, "lengths": lengths}, args.plot, args.plot_format):
            stderr.write(f"gwtrace analyze: wrote {path}\n")
        if args.hints:
            report = {}
    if args.format == "json":
        json.dump({**report, "hints": [h.to_dict() for h in ranked]}, stdout, indent=1)
        stdout.write("\n")
    else:
        if report:
            render_report(report, args.by, stdout)
        render_hints(ranked, stdout)
    for line in errors:
        stderr.write(f"gwtrace analyze: {line}\n")
    return 1 if errors else 0


