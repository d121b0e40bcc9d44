"""Which glidein records a command reads, and from where: what every command over records shares.

The filters (``--since``, ``--until``, ``--site``, ``--entry``, ``--frontend``; their options are
``gwtrace.cli.records``) and the sources: the store that ``gwtrace ingest --factory-logs`` fills, a
factory's files (``--factory-logs``) or a Jaeger query API (``--source``). ``load_records`` gives
records, ``load_summaries`` and ``summary_parts`` the analysis summaries.
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
