"""A failed span in its own words: the ``exception`` event the sidecar adds to every span that
ends in error (docs/design.md, "Failures in their own words").

The traced shell notes only what it already has when a span fails (``code.file.path``,
``code.line.number``, ``code.function.name``, ``gwtrace.failed.command``: attributes of the ``E`` line,
no fork). Reading what the process wrote to stderr is done here, off the traced process: whoever
started it (``gwtrace run``, the job wrapper) *registers* where that stderr goes, as a file
``stderr/<trace id>-<span id>`` in the state directory holding one path. For a span that ends in
error the sidecar walks up the span's open ancestors to the nearest registered one and reads the
tail of that file: the last lines (at most ``MAX_LINES`` lines, ``MAX_BYTES`` bytes), each
redacted by the one secrets rule (gwtrace.wire.redact). A registration is removed when its own
span (marked ``gwtrace.stderr.registered``) ends.

What the tail is: the file's lines between the size noted just before the span began and the
size noted when the sidecar read the span's end (FailureNotes: sizes are noted every 0.1 s while
a file is registered, and before each read of new events), so a line written up to about 0.1 s
around the span, by another process writing to the same stderr too, may be among them. No
registration (stderr a terminal or a pipe): the event still says where the span failed, and its
message is the span's status.
"""

from __future__ import annotations

import os
import stat
import time
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

if TYPE_CHECKING:   # `gwtrace run` imports register() before it runs CMD: nothing heavy here
    from gwtrace.wire.span import SpanRecord
    from gwtrace.wire.events import AttrValue

#: The registrations' directory in the state directory (made by the sidecar, 0700).
STDERR_DIR = "stderr"
#: Bounds of the tail attached to a span (issue 30: at most 20 lines, 4 KB).
MAX_LINES = 20
MAX_BYTES = 4096
#: A registration names a path of at most this many bytes.
MAX_PATH = 4096
#: The attribute a producer puts on the span it registered: the registration goes when it ends.
REGISTERED = "gwtrace.stderr.registered"
#: Registrations looked at (a state directory with more keeps the first ones).
MAX_REGISTRATIONS = 256
#: Sizes noted per registered file.
MAX_SAMPLES = 256
#: How often the sizes are noted while no events come (only while files are registered).
IDLE_SAMPLE_S = 0.1
#: How often the registrations are listed again (a new one is listed at once when a span of its
#: trace fails).
LIST_EVERY_S = 0.1
#: ... but not more often than this (a flood of failing spans of an unregistered trace).
RELIST_MIN_S = 0.05
#: Ancestors looked at for a registration (a deeper span keeps no tail).
MAX_DEPTH = 64
#: Attributes copied from the span to its exception event, as OpenTelemetry names them.
CODE_KEYS = ("code.file.path", "code.line.number", "code.function.name", "gwtrace.failed.command")

Key = Tuple[str, str]


def make_stderr_dir(directory: str) -> str:
    """``stderr/`` in the state directory (0700), where producers register their stderr."""
    path = os.path.join(directory, STDERR_DIR)
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def register(directory: str, trace_id: str, span_id: str, path: str, size: Optional[int] = None) -> bool:
    """Say that the process of span ``trace_id``/``span_id`` and its children write stderr to
    ``path``, which holds ``size`` bytes now (nothing before that offset is theirs: a log they
    append to). False (and nothing written) if the state directory has no ``stderr/``."""
    target = os.path.join(directory, STDERR_DIR)
    if not os.path.isdir(target) or "\n" in path:
        return False
    name = os.path.join(target, f"{trace_id}-{span_id}")
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    except OSError:
        return False
    try:
        os.write(fd, path.encode("utf-8", "surrogateescape") + b"\n"
                 + (b"" if size is None else str(size).encode() + b"\n"))
    finally:
        os.close(fd)
    return True


def stderr_of_fd(fd: int = 2) -> Optional[str]:
    """The path of the regular file descriptor ``fd`` writes to, or None (a terminal, a pipe,
    a socket, a deleted file: nothing the sidecar could read later)."""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        path = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    if not path.startswith("/") or path.endswith(" (deleted)"):
        return None
    return path


def tail_lines(path: str, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES,
               start: int = 0, end: Optional[int] = None) -> List[str]:
    """The last lines of the regular file ``path`` between byte offsets ``start`` and ``end``
    (its size if None), at most ``max_lines`` and ``max_bytes`` in all, each redacted. Never
    blocks (O_NONBLOCK: a FIFO put in its place is refused), never raises: [] for anything that
    is not a readable regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return []
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return []
        stop = info.st_size if end is None else min(end, info.st_size)
        begin = max(start, stop - max_bytes, 0)
        if stop <= begin:
            return []
        data = os.pread(fd, stop - begin, begin)
    except OSError:
        return []
    finally:
        os.close(fd)
    lines = data.decode("utf-8", "replace").split("\n")
    if begin > start and len(lines) > 1:
        lines = lines[1:]                  # the first line was cut
    lines = [line.rstrip("\r") for line in lines]
    while lines and not lines[-1].strip():
        lines.pop()
    # start-up cost: `gwtrace run` imports register() from here before it runs CMD
    from gwtrace.wire.redact import redact_message

    return [redact_message(line) for line in lines[-max_lines:]]


class FailureNotes:
    """Adds the ``exception`` event to spans that end in error; knows the registrations.

    Where a span's stderr ends: the sidecar notes the size of every registered file (one stat
    each) before it handles a read of new events, so a span's end, read in that step, was
    written before the size was taken: its tail stops there, and starts at the last size noted
    before the span began (noted every 0.1 s while files are registered and no events come).
    Lines written between the span's end and that read (up to the sidecar's poll interval,
    0.1 s, when it keeps up) can be among them, and so can lines written up to 0.1 s before
    the span began."""

    def __init__(self, directory: Optional[str]) -> None:
        self.dir = os.path.join(directory, STDERR_DIR) if directory else None
        self._names: Dict[str, str] = {}           # registration file name -> path
        self._floors: Dict[str, int] = {}          # path -> its size when registered (0: unknown)
        self._listed = -1.0
        self._sizes: Dict[str, List[Tuple[int, int]]] = {}    # path -> [(time us, size)], oldest first
        self._sampled = -1.0
        self._active = -1.0

    @property
    def idle_due(self) -> bool:
        """True if files are registered and their sizes were last noted IDLE_SAMPLE_S ago (noted
        while no events come too, so that a span's tail starts near its begin), or if events
        came since the registrations were last listed and that is LIST_EVERY_S ago (a producer
        registers just after its span's begin). Nothing while nothing is registered or read."""
        now = time.monotonic()
        if self._names:
            return now - self._sampled >= IDLE_SAMPLE_S
        return self._active > self._listed and now - self._listed >= LIST_EVERY_S

    def seen_events(self) -> None:
        """New events were read: a registration may have come with them."""
        self._active = time.monotonic()

    @property
    def watching(self) -> bool:
        """True if a registration exists (as last listed) or the listing is due."""
        return self.dir is not None and (bool(self._names) or time.monotonic() - self._listed >= LIST_EVERY_S)

    def _list(self) -> None:
        self._listed = time.monotonic()
        names: Dict[str, str] = {}
        try:
            found = [n for n in os.listdir(self.dir) if len(n) == 49] if self.dir else []
        except OSError:
            found = []
        for name in found[:MAX_REGISTRATIONS]:
            path = self._names.get(name)
            if path is None:
                found_path = _read_registration(os.path.join(self.dir or "", name))
                if found_path is None:
                    continue
                path, floor = found_path
                self._floors[path] = max(self._floors.get(path, 0), floor)
            names[name] = path
        self._names = names
        live = set(names.values())
        self._sizes = {p: v for p, v in self._sizes.items() if p in live}
        self._floors = {p: v for p, v in self._floors.items() if p in live}

    def sample(self) -> None:
        """Note the size of every registered file now (before a read of new events)."""
        if self.dir is None:
            return
        if time.monotonic() - self._listed >= LIST_EVERY_S:
            self._list()
        self._sampled = time.monotonic()
        now_us = int(time.time() * 1e6)
        for path in set(self._names.values()):
            try:
                size = os.stat(path).st_size
            except OSError:
                continue
            seen = self._sizes.setdefault(path, [])
            if not seen or seen[-1][1] != size:        # a size holds from when it was first seen
                seen.append((now_us, size))
                if len(seen) > MAX_SAMPLES:
                    del seen[: len(seen) - MAX_SAMPLES]

    def registered(self, trace_id: str) -> Dict[str, str]:
        """span id -> registered path, for one trace (listed again if the trace has none)."""
        if self.dir is None:
            return {}
        prefix = trace_id + "-"
        found = {n[len(prefix):]: p for n, p in self._names.items() if n.startswith(prefix)}
        if not found and time.monotonic() - self._listed >= RELIST_MIN_S:
            self._list()
            found = {n[len(prefix):]: p for n, p in self._names.items() if n.startswith(prefix)}
        return found

    def window(self, path: str, start_us: int) -> Tuple[int, Optional[int]]:
        """Byte offsets of ``path`` to read for a span that began at ``start_us``: from the
        last size noted before it began (at least the size it had when registered), to the
        last size noted (None: the file's size)."""
        start = self._floors.get(path, 0)
        seen = self._sizes.get(path)
        if not seen:
            return start, None
        for ts, size in seen:
            if ts <= start_us:
                start = max(start, size)
        return start, seen[-1][1]

    def on_finished(self, span: "SpanRecord", open_spans: Dict[Key, "SpanRecord"]) -> None:
        """Called for every finished span: explain an error, forget a registration of its own."""
        if span.status == "error":
            try:
                self.explain(span, open_spans)
            except Exception:  # noqa: BLE001 - a note never costs a span
                pass
        if REGISTERED in span.attributes:
            self._forget(span)

    def explain(self, span: "SpanRecord", open_spans: Dict[Key, "SpanRecord"]) -> None:
        """Add the exception event (once: a producer's own is kept)."""
        if any(name == "exception" for name, _, _ in span.events):
            return
        lines: List[str] = []
        registered = self.registered(span.trace_id)
        if registered:
            path = _nearest(span, open_spans, registered)
            if path:
                start, end = self.window(path, span.start_us)
                lines = tail_lines(path, start=start, end=end)
        attrs: Dict[str, "AttrValue"] = {}
        command = span.attributes.get("gwtrace.failed.command") or span.attributes.get("process.executable.name")
        code = span.attributes.get("process.exit.code")
        attrs["exception.type"] = str(command) if command else (f"exit code {code}" if code is not None else "error")
        attrs["exception.message"] = "\n".join(lines) if lines else (span.status_message or "error")
        for key in CODE_KEYS:
            if key in span.attributes:
                attrs[key] = span.attributes[key]
        if lines:
            attrs["gwtrace.stderr.lines"] = len(lines)
        span.events.append(("exception", span.end_us, attrs))
        span.lines = None                  # journaled by its fields now: the lines lack the event

    def _forget(self, span: "SpanRecord") -> None:
        if self.dir is None:
            return
        name = f"{span.trace_id}-{span.span_id}"
        try:
            os.unlink(os.path.join(self.dir, name))
        except OSError:
            pass
        self._names.pop(name, None)


def _read_registration(path: str) -> Optional[Tuple[str, int]]:
    """(path, size when registered or 0) from a registration file; None if it is not one."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, MAX_PATH + 32)
    except OSError:
        return None
    finally:
        os.close(fd)
    lines = data.decode("utf-8", "surrogateescape").split("\n")
    text = lines[0]
    floor = lines[1] if len(lines) > 2 else ""
    if not text.startswith("/") or len(text) > MAX_PATH:
        return None
    return text, int(floor) if floor.isdigit() and len(floor) < 19 else 0


def _nearest(span: "SpanRecord", open_spans: Dict[Key, "SpanRecord"],
             registered: Dict[str, str]) -> Optional[str]:
    """The registration of the span itself or of its nearest open ancestor."""
    current: Optional["SpanRecord"] = span
    for _ in range(MAX_DEPTH):
        if current is None:
            return None
        if current.span_id in registered:
            return registered[current.span_id]
        if current.parent_id in registered:
            return registered[current.parent_id]
        current = open_spans.get((span.trace_id, current.parent_id))
    return None
