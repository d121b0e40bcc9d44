"""``gwtrace ingest``: spans that came home (glidein output, a dead sidecar's spool), a factory's
files backfilled, a watch over its client log directories, or HTCondor job logs: the options, and
which of ``gwtrace.factory.ingest`` (and ``journey.ingest``) does the work."""

from __future__ import annotations

import argparse
import sys
from typing import List

from gwtrace.factory.ledger import DEFAULT_LOCK_WAIT_S, LEDGER_NAME


def build_parser() -> argparse.ArgumentParser:
    """The options of ``gwtrace ingest``: blocks in glidein output, a spool, a watch, a backfill, job logs."""
    p = argparse.ArgumentParser(prog="gwtrace ingest",
                                description="Forward spans shipped home in glidein .out/.err files, "
                                            "or recover a sidecar state directory.")
    p.add_argument("paths", nargs="*", help="glidein output files or directories of them")
    p.add_argument("--spool", metavar="DIR", help="recover the spans of a (dead) sidecar's state directory")
    p.add_argument("--ledger", help=f"file of digests already ingested (default ${{GWTRACE_HOME}}/{LEDGER_NAME})")
    p.add_argument("--lock-wait", type=float, default=DEFAULT_LOCK_WAIT_S, metavar="SECONDS",
                   help="wait this long for another ingest's hold on the ledger, then give up in one line "
                        f"(exit 0; default {DEFAULT_LOCK_WAIT_S:g})")
    p.add_argument("--watch", nargs="+", metavar="DIR",
                   help="follow client log directories: ingest job.*.err/.out files as glideins complete, and "
                        "backfill their records and the Condor-G logs' states (as --factory-logs, incrementally)")
    p.add_argument("--no-backfill", action="store_true",
                   help="--watch: forward shipped blocks only (no records of untraced glideins, no Condor-G states)")
    p.add_argument("--interval", type=float, default=60.0, help="--watch: seconds between scans (default 60)")
    p.add_argument("--settle", type=float, default=30.0,
                   help="--watch: a file is read once unchanged for this many seconds (default 30)")
    p.add_argument("--once", action="store_true", help="--watch: one scan, then exit (for cron)")
    p.add_argument("--factory-logs", nargs="+", metavar="DIR",
                   help="backfill: every glidein of these client log directories becomes a trace "
                        "(from its .out/.err and the Condor-G logs; docs/accounting.md)")
    p.add_argument("--condor-log", nargs="+", metavar="FILE",
                   help="HTCondor job event logs (a user's log=, a schedd's event log, condor_activity_*.log): "
                        "each job's journey as spans, incrementally (docs/journey.md)")
    p.add_argument("--job-ads", nargs="+", metavar="FILE",
                   help="with --condor-log or alone: job ads in long form (condor_q -long, history) "
                        "for TraceParent, DESIRED_Sites, requests and the glidein that matched")
    p.add_argument("--schedd", help="--condor-log: the schedd's name (default: the submit host's address)")
    p.add_argument("--store", metavar="PATH",
                   help="the store to write into (default: the configured OTLP endpoint, else the store "
                        "`gwtrace serve` reads)")
    return p


def main(argv: List[str]) -> int:
    p = build_parser()
    args = p.parse_args(argv)
    # after the arguments: the store, the OTel SDK and HTTP load here, not for `--help`
    import gwtrace.analysis  # noqa: F401  (registers the summarizer: records stored here carry their summaries)
    from gwtrace.factory.ingest import IngestError, ingest_factory_logs, ingest_outputs, watch

    if args.condor_log or args.job_ads:
        if args.paths or args.spool or args.watch or args.factory_logs:
            p.error("--condor-log/--job-ads take their files alone")
        from gwtrace.journey.ingest import ingest_condor

        return ingest_condor(args.condor_log or [], args.job_ads or [], args.schedd, args.store, sys.stderr)
    if args.factory_logs:
        if args.paths or args.spool or args.watch:
            p.error("--factory-logs takes its directories alone")
        return ingest_factory_logs(args.factory_logs, sys.stderr, args.store)
    if args.watch:
        if args.paths or args.spool:
            p.error("--watch takes its directories alone")
        try:
            return watch(args, sys.stderr)
        except (IngestError, OSError) as exc:
            print(f"gwtrace: {exc}", file=sys.stderr)
            return 1
    if not args.paths and not args.spool:
        p.error("give glidein output files/directories, or --spool DIR, or --watch DIR")
    return ingest_outputs(args.paths, args.spool, args.ledger, args.lock_wait, sys.stderr, args.store)
