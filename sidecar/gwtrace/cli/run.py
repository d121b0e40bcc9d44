"""``gwtrace run [--name NAME] [--level L] [--] CMD [ARGS...]``: CMD traced, with no change to its scripts.

Its arguments are read by hand, not by argparse: options stop at CMD, so that CMD's own options are
never taken for ours. ``gwtrace.shim.run`` does the tracing. ``UsageError``, ``HelpRequested`` and
``parsed`` serve ``gwtrace span`` too.
"""

from __future__ import annotations

import os
import sys
from typing import Callable, List, NamedTuple, Optional, Sequence, TypeVar, Union

from gwtrace.cli import describe

LEVELS = ("scripts", "functions", "commands")
DEFAULT_LEVEL = "functions"


class UsageError(ValueError):
    """Bad command line: one line on stderr, exit 2."""


class HelpRequested(Exception):
    """-h/--help: the help on stdout, exit 0."""


RUN_USAGE = "usage: gwtrace run [--name NAME] [--level scripts|functions|commands] [--] CMD [ARGS...]"
RUN_HELP = f"""{RUN_USAGE}

Run CMD as the root span of a new trace (or a child of $TRACEPARENT); every bash
below it is traced through BASH_ENV, other programs get TRACEPARENT. CMD's
streams, exit status and signals are its own. The root span is named after
CMD's program (never an argument).

options (before CMD; CMD's own options are never taken for these):
  --name NAME     name of the root span (default: CMD's basename)
  --level L       what bash children record: scripts, functions (default) or
                  commands ($GWTRACE_AUTO_LEVEL)
  -h, --help      this help

Spans go to the sidecar of $GWTRACE_SOCKET/$GWTRACE_DIR if one runs, else to a
private sidecar that exports (OTEL_EXPORTER_OTLP_* or the embedded store) and
stops when CMD ends; spans it could not deliver stay in its directory, and
gwtrace run prints the `gwtrace ingest --spool DIR` command that sends them.
GWTRACE_DISABLED=1 or OTEL_SDK_DISABLED=true: CMD runs untraced.
"""
class RunArgs(NamedTuple):
    name: Optional[str]
    level: str
    command: List[str]


def parse_run_args(argv: Sequence[str]) -> RunArgs:
    """``[--name NAME] [--level L] [--] CMD [ARGS...]``; options stop at CMD,
    so CMD's own options are never taken for ours."""
    name: Optional[str] = None
    level = os.environ.get("GWTRACE_AUTO_LEVEL") or DEFAULT_LEVEL
    args = list(argv)
    while args and args[0].startswith("-"):
        opt = args.pop(0)
        if opt == "--":
            break
        key, eq, value = opt.partition("=")
        if key in ("--name", "--level"):
            if not eq:
                if not args:
                    raise UsageError(f"{key} needs a value")
                value = args.pop(0)
            if key == "--name":
                name = value
            else:
                level = value
        elif opt in ("-h", "--help"):
            raise HelpRequested(RUN_HELP)
        else:
            raise UsageError(f"unknown option {opt!r} (usage: gwtrace run [--name NAME] [--level L] [--] CMD [ARGS...])")
    if level not in LEVELS:
        raise UsageError(f"--level must be one of {', '.join(LEVELS)}, not {level!r}")
    if not args:
        raise UsageError("no command given (usage: gwtrace run [--name NAME] [--level L] [--] CMD [ARGS...])")
    if name is not None and not name.strip():
        raise UsageError("--name must not be empty")
    return RunArgs(name, level, args)



T = TypeVar("T")


def parsed(parse: Callable[[Sequence[str]], T], argv: List[str], verb: str) -> Union[T, int]:
    """The parsed arguments, or the status to exit with: 0 after --help, 2 after a usage error."""
    try:
        return parse(argv)
    except HelpRequested as exc:
        sys.stdout.write(str(exc))
        return 0
    except UsageError as exc:
        print(f"gwtrace {verb}: {exc}", file=sys.stderr)
        return 2


def main(argv: List[str]) -> int:
    args = parsed(parse_run_args, argv, "run")
    if isinstance(args, int):
        return args
    from gwtrace.shim.run import trace_run

    return trace_run(args, describe)
