"""The ``gwtrace`` command: one registry of subcommands, one error handler.

A command is a module of this package named after it (``gwtrace/cli/show.py`` for ``gwtrace show``,
as rbenv keeps one command per file) with ``build_parser()`` (its options and help) and
``main(argv) -> int``; ``COMMANDS`` below registers it with the line ``gwtrace --help`` shows. The
modules are imported only when their command runs: ``gwtrace span`` stays one Python start, and a
command that needs a package this installation lacks (``serve`` in the .pyz) says so in one line.
The command modules are thin shells: the work is done in the domain packages they call.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import List, Optional

from gwtrace import __version__

#: command -> its line in ``gwtrace --help``, in the order listed there; gwtrace/cli/<command>.py runs it.
COMMANDS = {
    "sidecar": "start, stop or inspect the sidecar",
    "lib": "print the path of gwtrace.sh, for `source \"$(gwtrace lib)\"`",
    "show": "print a trace from the embedded store as a tree",
    "serve": "trace store, Jaeger-compatible API and web UI",
    "run": "run a command traced, with no change to its scripts",
    "span": "a span around one command, for any shell or language",
    "ingest": "recover spans from glidein .out/.err files or a spool",
    "glideins": "one record per glidein, from a factory's client log directories",
    "account": "pilot time in canonical hours per category and time bucket",
    "job": "a user job's journey (submit, queue, glidein, run, exit) and --why it waits",
    "now": "glideins alive now per site/entry, their phase and jobs; --alerts: site red lights",
    "analyze": "where glidein time goes per entry, and ranked hints on what to change",
    "control": "who traces what: rules, explain, audit, and a running job's file tail (gwtrace serve)",
}


def build_parser() -> argparse.ArgumentParser:
    """``gwtrace`` itself: ``--version``, and the registry's commands listed for ``--help``."""
    p = argparse.ArgumentParser(prog="gwtrace", description="Tracing for glideins and the jobs they run.")
    p.add_argument("--version", action="version", version=f"gwtrace {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name, summary in COMMANDS.items():
        sub.add_parser(name, help=summary, add_help=False)
    return p


def main(argv: Optional[List[str]] = None) -> int:
    """Every command runs inside one error handler: a failure is one
    ``gwtrace: ...`` line and exit status 1, never a traceback."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in COMMANDS:
            return run_command(argv[0], argv[1:])
        parser = build_parser()
        parser.parse_args(argv)          # --help, --version, or a usage error naming the commands
        parser.print_help(sys.stderr)    # no command given
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `gwtrace show | head`: the reader has what it wanted
        sys.stderr.close()
        return 141
    except Exception as exc:  # noqa: BLE001 - one clear line, never a traceback
        print(f"gwtrace: {describe(exc)}", file=sys.stderr)
        return 1


def run_command(command: str, argv: List[str]) -> int:
    """Run a registered command, saying in one line when it needs a package this
    installation lacks (the .pyz carries only what a worker node needs: `serve`
    wants Flask and waitress)."""
    try:
        module = importlib.import_module(f"gwtrace.cli.{command}")
        return module.main(argv)
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
