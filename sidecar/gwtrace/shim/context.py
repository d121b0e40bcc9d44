"""The trace context a command runs in, and the spans ``gwtrace run``/``span`` write.

Python's producer of event lines: the same lines as bash/gwtrace.sh writes
(wire/events.py formats and redacts them), into the same event log.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from typing import Dict, NamedTuple, Optional

from gwtrace.wire import traceparent
from gwtrace.wire.events import escape, format_event


class Context(NamedTuple):
    """The W3C context a span joins: trace id, parent span id ('' = root), flags."""

    trace_id: str
    parent_id: str
    flags: str
    tracestate: str


# --- context and events -----------------------------------------------------

def incoming_context(environ: Dict[str, str]) -> Optional[Context]:
    """TRACEPARENT/TRACESTATE from the environment, or None if absent or
    invalid (then the span starts a new trace, as the library does): the
    rule is wire/traceparent.py's."""
    parent = traceparent.parse(environ.get("TRACEPARENT", ""))
    if parent is None:
        return None
    return Context(parent.trace_id, parent.span_id, parent.flags_hex, environ.get("TRACESTATE", ""))


def context_or_warn(environ: Dict[str, str], verb: str) -> Optional[Context]:
    """incoming_context, with one warning line when a TRACEPARENT is set but
    invalid (the span then starts a new trace, as the library does)."""
    context = incoming_context(environ)
    raw = environ.get("TRACEPARENT", "")
    if context is None and raw.strip():
        shown = raw if len(raw) <= 80 and raw.isprintable() else repr(raw[:80])
        print(f"gwtrace {verb}: warning: ignoring invalid TRACEPARENT {shown}: starting a new trace",
              file=sys.stderr)
    return context


def new_id(nbytes: int) -> str:
    """A random id, never all zero (W3C)."""
    while True:
        value = os.urandom(nbytes).hex()
        if value.strip("0"):
            return value


def now_us() -> int:
    return time.time_ns() // 1000


def is_event_log(fd: int, path: str) -> bool:
    """The library's rule (bash/gwtrace.sh _gwtrace_is_log) on an open file: a
    regular file of this user's, empty or starting with ``gw1<TAB>``, or a
    sidecar's own ``events.log`` (its directory holds ``sidecar.lock``)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
        return False
    return st.st_size == 0 or os.pread(fd, 4, 0) == b"gw1\x09" or (
        os.path.basename(path) == "events.log" and os.path.exists(os.path.join(os.path.dirname(path), "sidecar.lock")))


def _own_directory(path: str) -> bool:
    try:
        return os.stat(os.path.dirname(os.path.abspath(path))).st_uid == os.geteuid()
    except OSError:
        return False


class EventLog:
    """Appends protocol lines to the sidecar's event log (one write per line,
    O_APPEND, as the bash library does). Failures are swallowed: tracing
    must never change what the command does."""

    def __init__(self, path: Optional[str], verb: str = "span") -> None:
        self.path = path
        self.verb = verb
        self.warned = False

    @classmethod
    def from_environ(cls, environ: Dict[str, str], verb: str = "span") -> "EventLog":
        url = environ.get("GWTRACE_SOCKET") or (
            "file://" + os.path.join(environ["GWTRACE_DIR"], "events.log") if environ.get("GWTRACE_DIR") else "")
        return cls(url[len("file://"):] if url.startswith("file://") and len(url) > 7 else None, verb)

    def write(self, line: bytes) -> None:
        if not self.path:
            return
        try:
            # O_NONBLOCK: a FIFO without a reader fails at once instead of blocking the command
            if not os.path.lexists(self.path) and not _own_directory(self.path):
                raise OSError(0, "not created outside a directory of ours")
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o600)
        except OSError as exc:
            self._warn(exc)
            return
        try:
            if not is_event_log(fd, self.path):
                self._warn(OSError(0, "not an event log of gwtrace's (a regular file of ours, empty or "
                                      "starting with gw1)"))
                return
            os.write(fd, line)
        except OSError as exc:
            self._warn(exc)
        finally:
            os.close(fd)

    def _warn(self, exc: OSError) -> None:
        """One line on our stderr (the user ran a gwtrace command), once."""
        if not self.warned:
            self.warned = True
            print(f"gwtrace {self.verb}: warning: cannot write the event log {self.path}: "
                  f"{exc.strerror or exc}; this span is not recorded", file=sys.stderr)


class Span:
    """One span written as B and E lines: begun before CMD starts, ended after
    it exits, with CMD's exit status (or signal)."""

    def __init__(self, log: EventLog, name: str, context: Optional[Context],
                 attributes: Dict[str, object]) -> None:
        self.log = log
        self.span_id = new_id(8)
        if context is None:
            self.trace_id, parent, remote, self.flags, state = new_id(16), "-", "0", "01", ""
        else:
            self.trace_id, parent, remote, self.flags, state = (
                context.trace_id, context.parent_id, "1", context.flags, context.tracestate)
        self.sampled = int(self.flags, 16) & 1 == 1
        self.tracestate = state
        if self.sampled:
            self.log.write(format_event("B", now_us(), os.getpid(), self.trace_id, self.span_id,
                                        parent, remote, self.flags, escape(state) or "-", escape(name),
                                        attributes=attributes))

    @property
    def traceparent(self) -> str:
        return traceparent.format_traceparent(self.trace_id, self.span_id, int(self.flags, 16))

    def end(self, status: str, attributes: Optional[Dict[str, object]] = None) -> None:
        if self.sampled:
            self.log.write(format_event("E", now_us(), os.getpid(), self.trace_id, self.span_id,
                                        status, attributes=attributes))
