"""``gwtrace analyze``: where glidein time goes per entry, and the ranked hints.

Records come from the store (``gwtrace ingest --factory-logs`` fills it) or
straight from a factory's client log directories (``--factory-logs``), as for
``gwtrace glideins``; the filters mean what they mean there.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from typing import Any, Callable, Dict, List, Optional, TextIO

from gwtrace.factory.cli import add_record_options, load_records
from .hints import Hint, Record, Thresholds, ce_wait, first_job_wait, hints, idle_tail

#: per-entry measures: name -> seconds for one record (None when the record cannot say).
MEASURES: Dict[str, Callable[[Record], Optional[float]]] = {
    "ce_wait": ce_wait,
    "validation": lambda r: (float(r["scripts"][-1]["end"] - r["started"])
                             if r.get("scripts") and r["scripts"][-1].get("end") is not None
                             and r.get("started") is not None else None),
    "first_job_wait": first_job_wait,
    "idle_tail": idle_tail,
}


def build_parser() -> argparse.ArgumentParser:
    """The options of ``gwtrace analyze``."""
    parser = argparse.ArgumentParser(prog="gwtrace analyze", description="Where glidein time goes, and what to change.")
    add_record_options(parser)
    parser.add_argument("--hints", action="store_true", help="only the ranked hints")
    parser.add_argument("--threshold", action="append", default=[], metavar="NAME=VALUE",
                        help="change a hint threshold (docs/analysis.md lists them)")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    return parser


def _quantile(values: List[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def entry_summary(records: List[Record]) -> List[Dict[str, Any]]:
    """Per entry: glideins, failures, canonical hours, and p50/p90 of each measure."""
    by_entry: Dict[str, List[Record]] = defaultdict(list)
    for rec in records:
        by_entry[rec.get("entry") or "?"].append(rec)
    rows = []
    for entry, recs in sorted(by_entry.items()):
        row: Dict[str, Any] = {"entry": entry, "site": recs[0].get("site"), "glideins": len(recs),
                               "failed": sum(r.get("status") == "ERROR" for r in recs),
                               "canonical_hours": round(sum(r["canonical"].get("total", 0.0) for r in recs) / 3600, 1)}
        for name, measure in MEASURES.items():
            values = [v for v in map(measure, recs) if v is not None]
            row[name] = ({"n": len(values), "p50": statistics.median(values), "p90": _quantile(values, 0.9)}
                         if values else {"n": 0})
        rows.append(row)
    return rows


def _minutes(cell: Dict[str, Any]) -> str:
    return f"{cell['p50'] / 60:.1f}/{cell['p90'] / 60:.1f}" if cell.get("n") else "-"


def render_table(rows: List[Dict[str, Any]], found: List[Hint], only_hints: bool, out: TextIO) -> None:
    """Plain text for a terminal: the entries (minutes, p50/p90), then the hints."""
    if not only_hints:
        head = ["entry", "site", "glideins", "failed", "canon_h"] + [f"{m} min p50/p90" for m in MEASURES]
        cells = [head] + [[r["entry"], str(r["site"]), str(r["glideins"]), str(r["failed"]), str(r["canonical_hours"])]
                          + [_minutes(r[m]) for m in MEASURES] for r in rows]
        widths = [max(len(c[i]) for c in cells) for i in range(len(head))]
        for line in cells:
            out.write("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() + "\n")
        out.write("\n")
    if not found:
        out.write("hints: none (no threshold crossed; docs/analysis.md lists them)\n")
    for rank, hint in enumerate(found, 1):
        out.write(f"{rank}. [{hint.cost_hours_per_day:.1f} canonical h/day] {hint.summary}\n"
                  f"   do: {hint.action}\n"
                  f"   evidence: {json.dumps(hint.evidence)}; {hint.count} glideins, e.g. "
                  f"{', '.join(g['glidein'] for g in hint.glideins[:3])} (trace {hint.glideins[0]['trace_id']})\n")


def main(argv: Optional[List[str]] = None, stdout: Optional[TextIO] = None, stderr: Optional[TextIO] = None) -> int:
    """Run ``gwtrace analyze``; 0 if every file was read, 1 if some could not be (what was read is analysed)."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        thresholds = Thresholds.parse(args.threshold)
    except ValueError as exc:
        parser.error(str(exc))
    records, errors = load_records(args)
    ranked = hints(records, thresholds)
    rows = entry_summary(records)
    if args.format == "json":
        body: Dict[str, Any] = {"hints": [h.to_dict() for h in ranked]}
        if not args.hints:
            body["entries"] = rows
        json.dump(body, stdout, indent=1)
        stdout.write("\n")
    else:
        render_table(rows, ranked, args.hints, stdout)
    for line in errors:
        stderr.write(f"gwtrace analyze: {line}\n")
    return 1 if errors else 0
