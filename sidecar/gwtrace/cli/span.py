"""``gwtrace span NAME [KEY=VALUE...] -- CMD [ARGS...]``: one span around one command, for any shell or language.

The ``--`` is required, so that an attribute can never be mistaken for the command. ``gwtrace.shim.run``
does the tracing.
"""

from __future__ import annotations

from typing import Dict, List, NamedTuple, Sequence

from gwtrace.cli.run import HelpRequested, UsageError, parsed

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


class SpanArgs(NamedTuple):
    name: str
    attributes: Dict[str, str]
    command: List[str]


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


def main(argv: List[str]) -> int:
    args = parsed(parse_span_args, argv, "span")
    if isinstance(args, int):
        return args
    from gwtrace.shim.run import trace_span

    return trace_span(args)
