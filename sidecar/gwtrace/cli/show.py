"""``gwtrace show``: a trace from the embedded store as an indented tree.

The terminal view an operator uses on the worker node or the factory, with no
browser: span names nested as they ran, durations, status, and the exit code
or error message of what failed.
"""

from __future__ import annotations

import argparse
import pathlib
import sqlite3
import sys
from typing import TYPE_CHECKING, Any, Dict, List, Optional, TextIO

from gwtrace.cli import COMMANDS
from gwtrace.cli.terminal import printable, terminal_text
from gwtrace.durations import span_duration

if TYPE_CHECKING:
    from gwtrace.store import TraceStore

STATUS_NAMES = {0: "UNSET", 1: "OK", 2: "ERROR"}


#: Lines of a failure's stderr shown under its span (the span keeps up to 20).
FAILURE_LINES = 20


def failure_of(span: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The attributes of the span's ``exception`` event (the sidecar adds one to every span that
    ends in error: gwtrace/sidecar/failure.py), or None."""
    for event in span.get("events") or ():
        if event.get("name") == "exception":
            return event.get("attributes") or {}
    return None


def where_text(failure: Dict[str, Any]) -> str:
    """``at FILE:LINE in FUNCTION (COMMAND)``, from what the failure says; '' if nothing."""
    path, line = failure.get("code.file.path"), failure.get("code.line.number")
    parts = []
    if path or line:
        parts.append(f"at {path or '?'}{f':{line}' if line else ''}")
    if failure.get("code.function.name"):
        parts.append(f"in {failure['code.function.name']}")
    if failure.get("gwtrace.failed.command"):
        parts.append(f"({failure['gwtrace.failed.command']} failed)")
    return " ".join(parts)


def failure_lines(span: Dict[str, Any]) -> List[str]:
    """What to print under a failed span: where, then its stderr's last lines (``| ``)."""
    failure = failure_of(span)
    if failure is None:
        return []
    out = []
    where = where_text(failure)
    if where:
        out.append(where)
    message = str(failure.get("exception.message") or "")
    if failure.get("gwtrace.stderr.lines") and message:
        out.extend("| " + line for line in message.split("\n")[-FAILURE_LINES:])
    return out


def render_tree(spans: List[Dict[str, Any]], out: TextIO, path: Optional[Dict[str, Any]] = None) -> None:
    """Print spans nested under their parents; orphans (parent not in this
    trace, e.g. the factory's span) are shown as roots. With ``path``
    (``critical_marks``), spans on the critical path are starred with their
    share of it."""
    ids = {s["span_id"] for s in spans}
    children: Dict[str, List[Dict[str, Any]]] = {}
    roots = []
    for span in sorted(spans, key=lambda s: (s["start_ns"], s["span_id"])):
        parent = span.get("parent_span_id") or ""
        if parent and parent in ids and parent != span["span_id"]:
            children.setdefault(parent, []).append(span)
        else:
            roots.append(span)

    def line(span: Dict[str, Any], depth: int) -> None:
        status = STATUS_NAMES.get(span.get("status_code", 0), "UNSET")
        detail = ""
        if status == "ERROR":
            message = span.get("status_message") or ""
            detail = f"  ({message})" if message else ""
        if span.get("attributes", {}).get("gwtrace.incomplete"):
            detail += "  [incomplete]"
        duration = span_duration(span["end_ns"] - span["start_ns"])
        if path is not None:
            share = path["share"].get(span["span_id"], 0)
            star = "* " if span["span_id"] in path["on"] else "  "
            detail += f"  [critical {span_duration(share)}]" if share else ""
            out.write(f"{star}{'  ' * depth}{span['name']}  {duration}  {status}{detail}\n")
        else:
            out.write(f"{'  ' * depth}{span['name']}  {duration}  {status}{detail}\n")
        if status == "ERROR":
            pad = ("  " if path is not None else "") + "  " * (depth + 2)
            for text in failure_lines(span):
                out.write(f"{pad}{printable(text)}\n")
        for child in children.get(span["span_id"], []):
            line(child, depth + 1)

    for root in roots:
        line(root, 0)


#: OTLP span flags: "whether the parent is remote" is known, and it is (the SDK's encoder sets both).
REMOTE_PARENT = 0x100 | 0x200


def is_finished(spans: List[Dict[str, Any]]) -> bool:
    """Whether a trace is whole: one root (a span whose parent is not in the
    trace: none, or remote) that started first and ended last. A run still
    going has only the spans that ended: several orphans (their parents are
    still open), or one that does not cover the others. A run that continued a TRACEPARENT has no
    local root: its top spans all have the caller's span, marked remote, as parent; the orphans of a run
    still going have local parents (not marked remote)."""
    ids = {s["span_id"] for s in spans}
    roots = [s for s in spans if (s.get("parent_span_id") or "") not in ids]
    if roots and all((s.get("flags") or 0) & REMOTE_PARENT == REMOTE_PARENT for s in roots):
        return True     # a run that continued a TRACEPARENT: its top spans' parent is the caller's (remote)
    if len(roots) != 1:
        return False
    root = roots[0]
    return all(root["start_ns"] <= s["start_ns"] and s["end_ns"] <= root["end_ns"] for s in spans)


#: How many of the most recent traces ``--last`` looks through for a whole one.
LAST_CANDIDATES = 20


def last_finished(store: Any) -> Optional[str]:
    """The most recent whole trace (see is_finished): a concurrent run's
    unfinished trace is newer, but not what ``--last`` means. Falls back to
    the most recent trace if none of the last LAST_CANDIDATES is whole."""
    for summary in store.find_traces(limit=LAST_CANDIDATES):
        trace_id = summary["trace_id"]
        if is_finished(store.get_trace(trace_id)):
            return trace_id
    return store.last_trace_id()


def _open_store(db: Optional[str]) -> "TraceStore":
    """The store to read, opened without creating any file or directory (a typo in --db stays a typo)."""
    from gwtrace.store import StoreUnreadable, TraceStore, default_store_path

    path = pathlib.Path(db) if db else default_store_path()
    if not path.exists():
        raise LookupError(f"no traces in {path} (no store there: the sidecar's embedded exporter, "
                          "`gwtrace ingest` or `gwtrace serve` makes it)")
    try:
        return TraceStore(path, create=False)
    except StoreUnreadable as exc:
        raise StoreUnreadable(f"store unreadable: {exc}") from None
    except sqlite3.DatabaseError as exc:
        raise StoreUnreadable(f"store unreadable: {path}: {exc}") from None


def critical_marks(spans: List[Dict[str, Any]]) -> Dict[str, Any]:
    """What ``render_tree`` marks: the spans the critical path passes through, and each one's own share."""
    from gwtrace.analysis.critical_path import on_path, path_share

    return {"on": on_path(spans), "share": path_share(spans)}


def render_self_times(spans: List[Dict[str, Any]], out: TextIO, top: int = 15) -> None:
    """Self-time per operation (span name), largest first."""
    from gwtrace.analysis.critical_path import self_time_by_operation

    rows = self_time_by_operation(spans)
    total = sum(t for _, t, _ in rows) or 1
    out.write("\nself-time by operation (time not in child spans):\n")
    width = max((len(name) for name, _, _ in rows[:top]), default=0)
    for name, value, count in rows[:top]:
        out.write(f"  {name.ljust(width)}  {span_duration(value):>10}  {100 * value / total:5.1f}%  {count} span(s)\n")
    if len(rows) > top:
        out.write(f"  ... {len(rows) - top} more operations\n")


def show(trace_id: Optional[str], last: bool, db: Optional[str], out: TextIO, critical: bool = False) -> int:
    from gwtrace.store import StoreUnreadable

    store = _open_store(db)
    try:
        if last or not trace_id:
            trace_id = last_finished(store)
            if trace_id is None:
                raise LookupError(f"no traces in {store.path}")
        spans = store.get_trace(trace_id)
        if not spans:
            raise LookupError(f"trace {trace_id} not read: {spans.cut}" if spans.cut
                              else f"no trace {trace_id} in {store.path}")
        service = spans[0].get("service") or "?"
        out.write(f"trace {trace_id}  service={service}  spans={len(spans)}\n")
        if spans.cut:
            out.write(f"trace {spans.cut}\n")
        if critical:
            out.write("* = on the critical path; [critical T] = the time of the path spent in the span itself\n")
            render_tree(spans, out, critical_marks(spans))
            render_self_times(spans, out)
        else:
            render_tree(spans, out)
    except sqlite3.DatabaseError as exc:  # damaged pages show up on the first read of them
        raise StoreUnreadable(f"store unreadable: {store.path}: {exc}") from None
    finally:
        store.close()
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gwtrace show", description=COMMANDS["show"])
    p.add_argument("trace_id", nargs="?", help="trace id (32 hex digits)")
    p.add_argument("--last", action="store_true", help="the most recent trace (default)")
    p.add_argument("--db", "--store", dest="db",
                   help="store file (default: ${GWTRACE_HOME:-~/.local/share/gwtrace}/traces.db)")
    p.add_argument("--critical-path", action="store_true",
                   help="mark the critical path (what set the trace's length) and print self-time per operation")
    return p


def main(argv: List[str]) -> int:
    args = build_parser().parse_args(argv)
    return show(args.trace_id, args.last, args.db, terminal_text(sys.stdout), args.critical_path)
