"""Which glidein records and analysis summaries a command reads: ``factory.selection``'s local sources
(the store, a factory's files) and a Jaeger query API (``--source jaeger=URL``), which only the analysis
reads traces from; the summaries streamed, or cut into parts read side by side (``fold.py``)."""

import argparse
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple

from ..factory.selection import MAX_GLIDEIN_LIFE, jaeger_url, keep, local_records, open_store
from .jaeger_source import load_from_jaeger, summaries_from_jaeger
from .summary import summarize


def load_records(args: argparse.Namespace) -> Tuple[List[Dict[str, Any]], List[str]]:
    """The selected records as dicts (``GlideinRecord.to_dict()`` shape) and the lines for unreadable files."""
    if getattr(args, "source", None) and not args.factory_logs:
        url = jaeger_url(args.source)
        # traces are found by start: a glidein ending in the period may have started up to its longest life before
        since = None if args.since is None else args.since - MAX_GLIDEIN_LIFE
        return [r for r in load_from_jaeger(url, since, args.until) if keep(r, args)], []
    return local_records(args)


def load_summaries(args: argparse.Namespace) -> Tuple[Iterable[List[Any]], List[str]]:
    """The selected glideins as analysis summaries (``analysis.summary``), and the lines for unreadable files.

    From the store they come one row at a time (the store stays open while they are read): the analysis
    of a pool's glideins never holds them all.
    """
    if getattr(args, "source", None) and not args.factory_logs:
        url = jaeger_url(args.source)
        since = None if args.since is None else args.since - MAX_GLIDEIN_LIFE
        return summaries_from_jaeger(url, since, args.until, lambda r: keep(r, args)), []
    if args.factory_logs:
        records, errors = local_records(args)
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
