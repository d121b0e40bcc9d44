"""The ``gwtrace`` command. Every failure is one clear line on stderr, exit 1."""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from gwtrace import __version__


def _lib_path() -> str:
    """Path of the bash library as a file bash can source (bash/gwtrace.sh in
    a checkout; extracted from a .pyz, see bashlib.real_path)."""
    from gwtrace import bashlib

    return bashlib.real_path(["gwtrace.sh"])


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gwtrace", description="Tracing for glideins and the jobs they run.")
    p.add_argument("--version", action="version", version=f"gwtrace {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    sc = sub.add_parser("sidecar", help="start, stop or inspect the sidecar")
    scs = sc.add_subparsers(dest="action", metavar="ACTION")
    start = scs.add_parser("start", help="daemonize a sidecar; prints export lines for eval")
    start.add_argument("--dir", help="state directory (default: $GWTRACE_DIR or a new private temp dir)")
    start.add_argument("--glidein-config", help="glidein_config file to read the pilot identity from")
    start.add_argument("--ship-to", metavar="FILE|stderr",
                       help="on SIGTERM, write undelivered spans there as blocks for `gwtrace ingest`")
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

    lib = sub.add_parser("lib", help="print the path of gwtrace.sh, for `source \"$(gwtrace lib)\"`")
    lib.add_argument("--auto", action="store_true",
                     help="the auto layer's gwtrace-auto.sh instead (BASH_ENV; docs/shim.md), copied with the "
                          "files it loads into --dir when this gwtrace runs from a .pyz; the accelerator is "
                          "checked for PATH's bash first (docs/shim.md, the load check)")
    lib.add_argument("--dir", help="where a .pyz copies the files (default: a per-user cache)")

    show = sub.add_parser("show", help="print a trace from the embedded store as a tree")
    show.add_argument("trace_id", nargs="?", help="trace id (32 hex digits)")
    show.add_argument("--last", action="store_true", help="the most recent trace (default)")
    show.add_argument("--db", help="store file (default: ${GWTRACE_HOME:-~/.local/share/gwtrace}/traces.db)")
    show.add_argument("--critical-path", action="store_true",
                      help="mark the critical path (what set the trace's length) and print self-time per operation")

    sub.add_parser("serve", help="trace store, Jaeger-compatible API and web UI", add_help=False)
    sub.add_parser("run", help="run a command traced, with no change to its scripts", add_help=False)
    sub.add_parser("span", help="a span around one command, for any shell or language", add_help=False)
    sub.add_parser("ingest", help="recover spans from glidein .out/.err files or a spool", add_help=False)
    sub.add_parser("glideins", help="one record per glidein, from a factory's client log directories",
                   add_help=False)
    sub.add_parser("account", help="pilot time in canonical hours per category and time bucket",
                   add_help=False)
    sub.add_parser("job", help="a user job's journey (submit, queue, glidein, run, exit) and --why it waits",
                   add_help=False)
    sub.add_parser("now", help="glideins alive now per site/entry, their phase and jobs; --alerts: site red lights",
                   add_help=False)
    sub.add_parser("analyze", help="where glidein time goes per entry, and ranked hints on what to change",
                   add_help=False)
    return p


# Commands with their own argument parsing, in their own modules.
_DELEGATED = {"serve": ("gwtrace.server", "serve_main"), "run": ("gwtrace.shim.run", "run_main"),
              "span": ("gwtrace.shim.run", "span_main"), "ingest": ("gwtrace.factory.ingest", "ingest_main"),
              "glideins": ("gwtrace.factory.cli", "main"), "analyze": ("gwtrace.analysis.cli", "main"),
              "account": ("gwtrace.factory.account_cli", "main"), "now": ("gwtrace.live.cli", "main"),
              "job": ("gwtrace.journey.cli", "main")}


def main(argv: Optional[List[str]] = None) -> int:
    """Every command, delegated ones included, runs inside one error handler:
    a failure is one ``gwtrace: ...`` line and exit status 1, never a traceback."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in _DELEGATED:
            return _delegate(argv[0], argv[1:])
        parser = build_parser()
        args = parser.parse_args(argv)
        return _dispatch(parser, args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `gwtrace show | head`: the reader has what it wanted
        sys.stderr.close()
        return 141
    except Exception as exc:  # noqa: BLE001 - one clear line, never a traceback
        print(f"gwtrace: {describe(exc)}", file=sys.stderr)
        return 1


def _delegate(command: str, argv: List[str]) -> int:
    """Run a command that parses its own arguments, saying in one line when
    it needs a package this installation lacks (the .pyz carries only what a
    worker node needs: `serve` wants Flask and waitress)."""
    import importlib

    module, function = _DELEGATED[command]
    try:
        entry = getattr(importlib.import_module(module), function)
        return entry(argv)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] in ("gwtrace", ""):
            raise
        print(f"gwtrace {command}: needs the Python package '{exc.name}', which this gwtrace lacks "
              f"(the .pyz carries only the sidecar): pip install gwtrace on this machine", file=sys.stderr)
        return 1


def describe(exc: BaseException) -> str:
    """An exception as the rest of one ``gwtrace: ...`` line.

    Expected failures (a bad directory, a sidecar that would not start, a
    refused file) are their message alone, without the "gwtrace: " a message
    relayed from the daemon already carries, on one line; anything else is
    an internal error, named so that it can be reported.
    """
    from gwtrace.sidecar.control import ControlError
    from gwtrace.sidecar.statedir import SpoolError

    cause = exc.__context__
    if isinstance(cause, OSError) and str(exc) == str(cause):
        exc = cause                          # relayed as text: say it as an OSError
    if isinstance(exc, OSError) and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    else:
        text = str(exc)
    text = " ".join(text.split())
    while text.startswith("gwtrace: "):
        text = text[len("gwtrace: "):]
    if isinstance(exc, (ControlError, SpoolError, LookupError, OSError, ValueError)):
        return text or type(exc).__name__
    return f"internal error: {type(exc).__name__}: {text}"


def _warn_endpoint() -> None:
    """A malformed OTLP endpoint: one line where the person starting the
    sidecar sees it (the sidecar's log says it too)."""
    from gwtrace.export.otlpenv import endpoint_problem

    problem = endpoint_problem()
    if problem:
        print(f"gwtrace: warning: {problem}", file=sys.stderr)


def _dispatch(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from gwtrace.sidecar import control

    if args.command == "lib":
        if args.auto:
            import os

            from gwtrace.shim.run import auto_lib_path, check_accelerator

            path = auto_lib_path(args.dir)
            if path is not None:          # the accelerator, checked for the bash that will source it
                check_accelerator(os.path.dirname(path), ["bash"], dict(os.environ))
            if path is None:
                print("gwtrace: the auto layer is not in this gwtrace; give --dir to copy it out of a .pyz",
                      file=sys.stderr)
                return 1
            print(path)
            return 0
        print(_lib_path())
        return 0
    if args.command == "show":
        from gwtrace.cli.show import show
        from gwtrace.cli.terminal import terminal_text

        return show(args.trace_id, args.last, args.db, terminal_text(sys.stdout), args.critical_path)
    if args.command == "sidecar":
        if args.action == "start":
            _warn_endpoint()
            return control.start(args.dir, args.glidein_config, sys.stdout, args.ship_to)
        if args.action == "run":
            directory = control.choose_directory(args.dir)
            return control.run_foreground(directory, args.glidein_config)
        if args.action == "stop":
            return control.stop(args.dir, args.timeout, sys.stderr, args.ship_to)
        if args.action == "status":
            return control.status(args.dir, sys.stdout)
        parser.parse_args(["sidecar", "--help"])
    parser.print_help(sys.stderr)
    return 2
