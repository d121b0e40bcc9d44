"""``gwtrace glideins``: one line (or JSON object) per glidein, from the store or factory files.

Also the home of what every command over records shares: the options that
say where records come from and which are kept (``add_record_options``),
and reading them (``load_records``): from the store that
``gwtrace ingest --factory-logs`` fills, or straight from a factory's files.
"""

import argparse
import csv
import json
import sys
import time
from datetime import datetime, timezone
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, TextIO, Tuple

from .canonical import CATEGORIES
from .collect import collect
from .record import GlideinRecord
from ..wire.redact import strip_userinfo
from ..cli.terminal import terminal_text

TABLE = ("cluster", "proc", "site", "entry", "status", "failed_script", "cpus", "memory_mb", "gpus", "started",
         "ended", "incomplete")


#: Epoch seconds the store can hold (its times are int64 nanoseconds: up to the year 2262).
MAX_EPOCH_SECONDS = ((1 << 63) - 1) // 10**9


def parse_time(text: str) -> int:
    """Epoch seconds from an integer or an ISO-8601 time (UTC when no offset), within what the store holds."""
    try:
        seconds = int(text)
    except ValueError:
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a time (epoch seconds or ISO-8601): {text[:40]!r}") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        seconds = int(moment.timestamp())
    if abs(seconds) > MAX_EPOCH_SECONDS:
        raise argparse.ArgumentTypeError(f"time out of range (the years 1678 to 2262): {text[:40]!r}")
    return seconds


def build_parser() -> argparse.ArgumentParser:
    """The options of ``gwtrace glideins``."""
    parser = argparse.ArgumentParser(prog="gwtrace glideins", description="One record per glidein.")
    add_record_options(parser)
    parser.add_argument("--format", choices=("table", "json", "csv"), default="table")
    return parser


def add_record_options(parser: argparse.ArgumentParser) -> None:
    """Where the records come from and which are kept: the same options for every command over records."""
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--factory-logs", nargs="+", metavar="DIR",
                        help="read factory client log directories (job.C.P.out/.err, condor_activity_*.log) "
                             "instead of the store")
    source.add_argument("--source", metavar="jaeger=URL",
                        help="read the glidein traces from a Jaeger query API (Jaeger, Tempo's Jaeger API, or "
                             "another gwtrace serve) and make the records from them")
    source.add_argument("--store", metavar="PATH",
                        help="the trace store holding the records (default: the one `gwtrace serve` reads; "
                             "`gwtrace ingest --factory-logs` fills it)")
    parser.add_argument("--since", type=parse_time, help="glideins ending at or after T (epoch or ISO-8601)")
    parser.add_argument("--until", type=parse_time, help="glideins starting before T (epoch or ISO-8601)")
    parser.add_argument("--site", help="GLIDEIN_Site")
    parser.add_argument("--entry", help="factory entry name")
    parser.add_argument("--frontend", help="frontend client name, or its part before the first '.'")


def open_store(args: argparse.Namespace) -> Any:
    """The store named by ``--store`` (or the default), opened for reading: a missing one is one clear error."""
    from gwtrace.store import TraceStore

    return TraceStore(args.store, create=False)


def load_records(args: argparse.Namespace) -> Tuple[List[Dict[str, Any]], List[str]]:
    """The selected records as dicts (``GlideinRecord.to_dict()`` shape) and the lines for unreadable files."""
    if args.factory_logs:
        found = collect(args.factory_logs)
        return [r.to_dict() for r in select(found.records, args)], found.errors + found.skipped
    if getattr(args, "source", None):
        from gwtrace.analysis.jaeger_source import load_from_jaeger

        url = _jaeger_url(args.source)
        # traces are found by start: a glidein ending in the period may have started up to its longest life before
        since = None if args.since is None else args.since - MAX_GLIDEIN_LIFE
        return [r for r in load_from_jaeger(url, since, args.until) if _keep(r, args)], []
    with open_store(args) as store:
        return list(store.glidein_records(args.since, args.until, args.site, args.entry, args.frontend)), []


def load_summaries(args: argparse.Namespace) -> Tuple[Iterable[List[Any]], List[str]]:
    """The selected glideins as analysis summaries (``analysis.summary``), and the lines for unreadable files.

    From the store they come one row at a time (the store stays open while they are read): the analysis
    of a pool's glideins never holds them all.
    """
    from gwtrace.analysis.summary import summarize

    if getattr(args, "source", None) and not args.factory_logs:
        from gwtrace.analysis.jaeger_source import summaries_from_jaeger

        url = _jaeger_url(args.source)
        since = None if args.since is None else args.since - MAX_GLIDEIN_LIFE
        return summaries_from_jaeger(url, since, args.until, lambda r: _keep(r, args)), []
    if args.factory_logs:
        records, errors = load_records(args)
        return (summarize(r) for r in records), errors
    store = open_store(args)

    def stream() -> Iterator[List[Any]]:
        with store:
            yield from store.glidein_summaries(args.since, args.until, args.site, args.entry, args.frontend)

    return stream(), []


#: below this many glideins a part, a child process costs more than it saves
MIN_PART = 10_000


def summary_parts(args: argparse.Namespace, workers: int) -> Tuple[List[Callable[[], Iterable[List[Any]]]], List[str]]:
    """The selected summaries as parts of the period that can be read side by side (``analysis.fold``), each
    opening its own store reader; one part unless the store holds enough glideins for ``workers`` > 1."""
    if workers <= 1 or args.factory_logs or getattr(args, "source", None):
        items, errors = load_summaries(args)
        return [lambda: items], errors
    filters = {"since": args.since, "until": args.until, "site": args.site, "entry": args.entry,
               "frontend": args.frontend}
    with open_store(args) as store:
        store.refresh_glidein_records()
        cuts = store.summary_cuts(workers, MIN_PART, **filters)
    bounds = list(zip([None] + cuts, cuts + [None]))

    def part(low: Optional[int], high: Optional[int]) -> Callable[[], Iterator[List[Any]]]:
        def read() -> Iterator[List[Any]]:
            with open_store(args) as store:
                yield from store.glidein_summaries(part=(low, high), refresh=False, **filters)
        return read

    return [part(low, high) for low, high in bounds], []


def _jaeger_url(source: str) -> str:
    kind, _, url = source.partition("=")
    if kind != "jaeger" or not url:
        raise ValueError(f"--source takes jaeger=URL, not {strip_userinfo(source)!r}")
    return url


#: the longest a glidein lives (GlideinWMS's usual maximum walltime is 2 days, a few sites allow more)
MAX_GLIDEIN_LIFE = 4 * 86400


def _keep(rec: Dict[str, Any], args: argparse.Namespace) -> bool:
    """``select`` for one record dict."""
    if args.since is not None and rec.get("ended") is not None and rec["ended"] < args.since:
        return False
    if args.until is not None and rec.get("started") is not None and rec["started"] >= args.until:
        return False
    if args.site and rec.get("site") != args.site or args.entry and rec.get("entry") != args.entry:
        return False
    frontend = rec.get("frontend") or ""
    return not args.frontend or args.frontend in (frontend, frontend.split(".")[0])


def select(records: Iterable[GlideinRecord], args: argparse.Namespace) -> List[GlideinRecord]:
    """The records matching the filters (unknown times never exclude a record)."""
    out = []
    for rec in records:
        if args.since is not None and rec.ended is not None and rec.ended < args.since:
            continue
        if args.until is not None and rec.started is not None and rec.started >= args.until:
            continue
        if args.site and rec.site != args.site or args.entry and rec.entry != args.entry:
            continue
        if args.frontend and args.frontend not in (rec.frontend, (rec.frontend or "").split(".")[0]):
            continue
        out.append(rec)
    return out


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
    cells = [list(TABLE)] + [[table_cell(k, row[k]) for k in TABLE] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(TABLE))]
    for line in cells:
        stream.write("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() + "\n")


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


if __name__ == "__main__":
    sys.exit(main())
