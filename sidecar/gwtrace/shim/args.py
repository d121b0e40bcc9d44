"""The arguments of ``gwtrace run`` and ``gwtrace span``, and their help."""

from __future__ import annotations

import os
from typing import Dict, List, NamedTuple, Optional, Sequence

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
SPAN_USAGE = "usage: gwtrace span NAME [KEY=VALUE...] -- CMD [ARGS...]"
SPAN_HELP = f"""{SPAN_USAGE}

One span named NAME around one command, for any shell (sh, dash, busybox,
tcsh) or language: a child of $TRACEPARENT, written to the event log of
$GWTRACE_SOCKET/$GWTRACE_DIR (no sidecar needed to run); CMD gets the span as
TRACEPARENT. CMD's streams, exit status and signals are its own. Attributes
whose key or value holds a secret are written as [REDACTED] (docs/protocol.md).
Without an event log, or with GWTRACE_DISABLED=1, CMD only runs.

  -h, --help      this help (as the first argument)
"""


class RunArgs(NamedTuple):
    name: Optional[str]
    level: str
    command: List[str]


class SpanArgs(NamedTuple):
    name: str
    attributes: Dict[str, str]
    command: List[str]


# --- argument parsing -------------------------------------------------------

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


def parse_span_args(argv: Sequence[str]) -> SpanArgs:
    """``NAME [KEY=VALUE...] -- CMD [ARGS...]``: the ``--`` is required, so that
    an attribute can never be mistaken for the command."""
    args = list(argv)
    usage = SPAN_USAGE
    if args and args[0] in ("-h", "--help"):
        raise HelpRequested(SPAN_HELP)
    if not args:
        raise UsageError(usage)
    if "--" not in args:
        raise UsageError(f"missing '--' before the command ({usage})")
    cut = args.index("--")
    head, command = args[:cut], args[cut + 1:]
    if not head or not head[0].strip() or head[0].startswith("-"):
        raise UsageError(f"a span name comes first ({usage})")
    if not command:
        raise UsageError(f"no command after '--' ({usage})")
    attributes: Dict[str, str] = {}
    for item in head[1:]:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise UsageError(f"attribute {item!r} is not KEY=VALUE")
        attributes[key] = value
    return SpanArgs(head[0], attributes, command)
