"""What every command over glidein records shares (``glideins``, ``account``, ``analyze``): the options
that say where the records come from and which are kept (reading them is ``gwtrace.factory.selection``),
and the plain-text table they print."""

import argparse
from typing import List, TextIO

from gwtrace.factory.selection import parse_time


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


def write_table(out: TextIO, head: List[str], body: List[List[str]]) -> None:
    """Columns padded to their widest cell, two spaces apart, no trailing blanks."""
    cells = [head] + body
    widths = [max(len(r[i]) for r in cells) for i in range(len(head))]
    for line in cells:
        out.write("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() + "\n")
