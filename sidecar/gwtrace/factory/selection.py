"""Which glidein records a command reads, and from where: what every command over records shares.

The filters (``--since``, ``--until``, ``--site``, ``--entry``, ``--frontend``; their options are
``gwtrace.cli.records``) and the local sources: the store that ``gwtrace ingest --factory-logs`` fills or
a factory's files (``--factory-logs``): ``local_records``. A Jaeger query API (``--source``) and the
analysis summaries are ``analysis.selection``'s (the layer above).
"""

import argparse
from datetime import datetime, timezone
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple

from .collect import collect
from .record import GlideinRecord
from ..wire.redact import strip_userinfo


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


def open_store(args: argparse.Namespace) -> Any:
    """The store named by ``--store`` (or the default), opened for reading: a missing one is one clear error."""
    from gwtrace.store import TraceStore

    return TraceStore(args.store, create=False)


def local_records(args: argparse.Namespace) -> Tuple[List[Dict[str, Any]], List[str]]:
    """The selected records as dicts (``GlideinRecord.to_dict()`` shape) and the lines for unreadable files,
    from a factory's files (``--factory-logs``) or the store (a Jaeger source: ``analysis.selection``)."""
    if args.factory_logs:
        found = collect(args.factory_logs)
        return [r.to_dict() for r in select(found.records, args)], found.errors + found.skipped
    with open_store(args) as store:
        return list(store.glidein_records(args.since, args.until, args.site, args.entry, args.frontend)), []


def jaeger_url(source: str) -> str:
    kind, _, url = source.partition("=")
    if kind != "jaeger" or not url:
        raise ValueError(f"--source takes jaeger=URL, not {strip_userinfo(source)!r}")
    return url


#: the longest a glidein lives (GlideinWMS's usual maximum walltime is 2 days, a few sites allow more)
MAX_GLIDEIN_LIFE = 4 * 86400


def keep(rec: Dict[str, Any], args: argparse.Namespace) -> bool:
    """``select`` for one record dict (a record from a Jaeger source)."""
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
