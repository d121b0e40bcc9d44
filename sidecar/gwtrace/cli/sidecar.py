"""``gwtrace sidecar start|run|stop|status``: the sidecar's life on a worker node (gwtrace/sidecar/control.py)."""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import List

from gwtrace.cli import COMMANDS


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gwtrace sidecar", description=COMMANDS["sidecar"])
    scs = p.add_subparsers(dest="action", metavar="ACTION")
    start = scs.add_parser("start", help="daemonize a sidecar; prints export lines for eval")
    start.add_argument("--dir", help="state directory (default: $GWTRACE_DIR or a new private temp dir)")
    start.add_argument("--glidein-config", help="glidein_config file to read the pilot identity from")
    start.add_argument("--ship-to", metavar="FILE|stderr",
                       help="on SIGTERM, write undelivered spans there as blocks for `gwtrace ingest`")
    start.add_argument("--ask-trace-id", metavar="TRACE_ID",
                       help="ask the controller (GWTRACE_CONTROLLER) for this glidein's trace, at most 1 s; "
                            "prints the decision as gwtrace_control_* assignments")
    start.add_argument("--default-level", default="", help="the level when no rule decides (with --ask-trace-id)")
    start.add_argument("--default-ratio", default="1", help="the sampling ratio when no rule decides")
    run = scs.add_parser("run", help="run a sidecar in the foreground")
    run.add_argument("--dir", help="state directory (default: $GWTRACE_DIR)")
    run.add_argument("--glidein-config")
    stop = scs.add_parser("stop", help="flush everything, then stop the sidecar")
    stop.add_argument("--dir")
    stop.add_argument("--timeout", type=float, default=120.0, help="seconds to wait (default 120)")
    stop.add_argument("--ship-to", metavar="FILE|stderr",
                      help="write spans that could not be delivered there as blocks for `gwtrace ingest`")
    status = scs.add_parser("status", help="print the sidecar's counters")
    status.add_argument("--dir")
    return p


def _warn_endpoint() -> None:
    """A malformed OTLP endpoint: one line where the person starting the
    sidecar sees it (the sidecar's log says it too)."""
    from gwtrace.export.otlpenv import endpoint_problem

    problem = endpoint_problem()
    if problem:
        print(f"gwtrace: warning: {problem}", file=sys.stderr)


def main(argv: List[str]) -> int:
    from gwtrace.sidecar import control

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.action == "start":
        _warn_endpoint()
        ask = None
        if args.ask_trace_id is not None:
            if not re.fullmatch(r"[0-9a-f]{32}", args.ask_trace_id):
                print(f"gwtrace: --ask-trace-id {args.ask_trace_id[:40]!r} is not 32 lower-case hex digits",
                      file=sys.stderr)
                return 2
            ask = {"trace_id": args.ask_trace_id, "level": args.default_level, "ratio": args.default_ratio}
        # With --ask-trace-id, the glidein's one question (at most 0.85 s) after the start; its decision
        # printed and handed to the daemon, which enforces it.
        return control.start(args.dir, args.glidein_config, sys.stdout, args.ship_to, ask=ask)
    if args.action == "run":
        directory = control.choose_directory(args.dir)
        return control.run_foreground(directory, args.glidein_config)
    if args.action == "stop":
        return control.stop(args.dir, args.timeout, sys.stderr, args.ship_to)
    if args.action == "status":
        return control.status(args.dir, sys.stdout)
    parser.print_help()                  # no action: the actions, on stdout, exit 0
    return 0
