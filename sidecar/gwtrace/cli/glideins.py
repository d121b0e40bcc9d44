"""``gwtrace glideins``: one line (or JSON object) per glidein, from the store or factory files."""

import argparse
import csv
import json
import sys
import time
from typing import Any, Dict, Iterable, List, Optional, TextIO

from gwtrace.cli.records import add_record_options, write_table
from gwtrace.cli.terminal import terminal_text
from gwtrace.factory.canonical import CATEGORIES
from gwtrace.analysis.selection import load_records
from gwtrace.factory.selection import open_store

TABLE = ("cluster", "proc", "site", "entry", "status", "failed_script", "cpus", "memory_mb", "gpus", "started",
         "ended", "incomplete")


def build_parser() -> argparse.ArgumentParser:
    """The options of ``gwtrace glideins``."""
    parser = argparse.ArgumentParser(prog="gwtrace glideins", description="One record per glidein.")
    add_record_options(parser)
    parser.add_argument("--format", choices=("table", "json", "csv"), default="table")
    return parser


def _flat(rec: Dict[str, Any]) -> Dict[str, Any]:
    row: Dict[str, Any] = {k: rec.get(k) for k in TABLE}
    row.update({k: rec.get(k) for k in ("schedd", "factory", "frontend", "glidein_uuid", "submitted")})
    row["incomplete_reasons"] = "; ".join(rec.get("incomplete_reasons") or [])
    row["gwms_duration"] = (rec.get("gwms") or {}).get("duration")
    row["gwms_jobsnr"] = (rec.get("gwms") or {}).get("jobsnr")
    row.update({f"canonical_{c}": round((rec.get("canonical") or {}).get(c, 0.0), 3) for c in CATEGORIES})
    return row


TIMES = ("submitted", "started", "ended")


def table_cell(key: str, value: Any) -> str:
    """A value as a table shows it: times as UTC dates a person reads (JSON and CSV keep epoch seconds)."""
    if value is None:
        return ""
    if key in TIMES and isinstance(value, (int, float)):
        return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(value))
    return str(value)


#: characters of JSON gathered before one write (one write per token took 170 s for 20 000 records unbuffered)
WRITE_CHUNK = 1 << 20


def write_json_array(texts: Iterable[str], stream: TextIO) -> None:
    """Write JSON texts as one array, one element a line, in writes of ``WRITE_CHUNK`` characters: the
    records stream (nothing holds them all) and a pipe gets few, large writes."""
    stream.write("[")
    pending: List[str] = []
    size, first = 0, True
    for text in texts:
        pending.append("\n" if first else ",\n")
        pending.append(text)
        first = False
        size += len(text) + 2
        if size >= WRITE_CHUNK:
            stream.write("".join(pending))
            pending, size = [], 0
    pending.append("\n]\n")
    stream.write("".join(pending))


def render(records: Iterable[Dict[str, Any]], fmt: str, stream: TextIO) -> None:
    """Write records (dicts) as a table, JSON (one array, a record a line) or CSV."""
    if fmt == "json":
        encode = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode
        write_json_array((encode(r) for r in records), stream)
        return
    records = list(records)
    rows = [_flat(r) for r in records]
    if fmt == "csv":
        writer = csv.DictWriter(stream, fieldnames=list(rows[0]) if rows else list(TABLE))
        writer.writeheader()
        writer.writerows(rows)
        return
    write_table(stream, list(TABLE), [[table_cell(k, row[k]) for k in TABLE] for row in rows])


def main(argv: Optional[List[str]] = None, stdout: Optional[TextIO] = None, stderr: Optional[TextIO] = None) -> int:
    """Run ``gwtrace glideins``; 0 if every file was read, 1 if some could not be."""
    stdout, stderr = stdout or sys.stdout, terminal_text(stderr or sys.stderr)
    args = build_parser().parse_args(argv)
    if args.format == "table":
        stdout = terminal_text(stdout)          # worker text: control characters escaped (cli/terminal.py)
    if args.format == "json" and not args.factory_logs and not getattr(args, "source", None):
        with open_store(args) as store:        # the stored JSON texts as they are: nothing decoded
            write_json_array(store.glidein_record_texts(args.since, args.until, args.site, args.entry,
                                                        args.frontend), stdout)
        return 0
    records, errors = load_records(args)
    render(records, args.format, stdout)
    for line in errors:
        stderr.write(f"gwtrace glideins: {line}\n")
    return 1 if errors else 0

