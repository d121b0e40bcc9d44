"""HTCondor job event logs read with HTCondor's own bindings, from a byte offset.

Why the bindings: they know both timestamp formats (legacy ``MM/DD HH:MM:SS``,
whose year they take as the current one, and the ISO default since 8.9)
and every event body.  What they do not do is carry on past something they
cannot read: an event code newer than the bindings (``ValueError``), a
damaged event, or junk between events simply ends their loop.  So this
reader restarts them after the bad part (found by looking for the next
event header) and counts what it skipped; a partial event at the end of
the file (still being written) is left for the next run, whose offset
points at its start.

An event longer than ``MAX_EVENT_BYTES`` is never handed to the bindings
(they read an event whole: one 1 GB line took 5.3 GB, then the store refused
it and no offset was saved, so every later run failed the same way).  Such
events are found first by a scan of the bytes for the ``...`` lines that end
events (``_long_events``, 1 MiB at a time), the bindings are stopped before
each, and each is skipped and reported (``ReadResult.skipped``).

Both readers of event logs use it: the factory's Condor-G logs
(``backfill``) and the users' job logs (``gwtrace.journey.ingest``); a log is
known again by its head (``log_head``), so a rotated one is read from 0.
"""

import calendar
import hashlib
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from .condorg_log import bindings

HEADER = re.compile(rb"(?m)^\d{3} \(\d+\.\d+\.\d+\) ")
_UNKNOWN = re.compile(r"^(\d+) is not a valid JobEventType")

#: The items each event code contributes (kept small: a log may hold millions of events).
WANTED = {
    0: ("SubmitHost", "LogNotes"),
    1: ("ExecuteHost", "SlotName"),
    4: ("TerminatedAndRequeued",),
    5: ("ReturnValue", "TerminatedBySignal", "TerminatedNormally"),
    6: ("MemoryUsage", "Size"),
    7: ("Message",),
    9: ("Reason",),
    12: ("HoldReason", "HoldReasonCode", "HoldReasonSubCode"),
    13: ("Reason",),
    21: ("ErrorMsg", "Daemon"),
    22: ("DisconnectReason", "StartdName"),
    23: ("StartdName",),
    24: ("Reason", "StartdName"),
    27: ("GridResource", "GridJobId"),
    40: ("Type", "Host"),
}


_KNOWN: "set[int]" = set()


@dataclass
class JobEvent:
    """One event: code, job, epoch seconds, and the items ``WANTED`` for its code (or the whole ad for 028)."""

    code: int
    cluster: int
    proc: int
    time: int
    items: Dict[str, Any]


@dataclass
class ReadResult:
    """What one read of a log gave."""

    events: List[JobEvent] = field(default_factory=list)
    offset: int = 0               # where the next run starts (a partial last event starts there)
    unknown: Dict[int, int] = field(default_factory=dict)   # event code -> how many were skipped
    bad: int = 0                  # damaged events or junk skipped (each one region)
    bad_bytes: int = 0
    partial_tail: int = 0         # bytes of an unfinished last event, left for the next run
    more: bool = False            # stopped at the event limit: read again from ``offset``
    skipped: List[Tuple[int, int]] = field(default_factory=list)   # (offset, bytes) of events over the limit


_HOUR_START: Dict[str, int] = {}


def event_time(iso: str) -> int:
    """Epoch seconds of an event's ``EventTime`` (``YYYY-MM-DDTHH:MM:SS[.fff][Z]``, local unless ``Z``).

    What the bindings' ``timestamp`` gives (they leave ``Z`` times local, a slip this corrects), at a
    fraction of its cost: ``strptime`` per event was a third of the reading; the local start of each hour
    is computed once.
    """
    utc = iso.endswith("Z")
    hour = iso[:13] + ("Z" if utc else "")
    start = _HOUR_START.get(hour)
    if start is None:
        fields = (int(iso[0:4]), int(iso[5:7]), int(iso[8:10]), int(iso[11:13]), 0, 0, 0, 0, -1)
        start = calendar.timegm(fields) if utc else int(time.mktime(fields))
        if len(_HOUR_START) > 100000:
            _HOUR_START.clear()
        _HOUR_START[hour] = start
    return start + int(iso[14:16]) * 60 + int(iso[17:19])


def _event(raw: Any) -> JobEvent:
    """One event as a ``JobEvent``: only the attributes its code needs are looked up (a copy of the
    whole event ClassAd costs twice as much), except for job ad events, which are kept whole."""
    ad = getattr(raw, "_data", raw)   # htcondor2 keeps the event's ClassAd there: one call layer less
    code = int(ad["EventTypeNumber"])
    if code not in _KNOWN:
        raise ValueError(f"{code} is not a valid JobEventType")
    if code == 28 or code == 33:
        items = dict(raw.items())
    else:
        items = {}
        get = ad.get
        for key in WANTED.get(code, ()):
            value = get(key)
            if value is not None:
                items[key] = value
    return JobEvent(code, int(raw.cluster), int(raw.proc), event_time(ad["EventTime"]), items)


def _open_at(htcondor: Any, path: str, offset: int) -> Any:
    log = htcondor.JobEventLog(path)
    if offset:
        state = log.__getstate__()
        log.__setstate__((state[0], offset))
    return log


SCAN_BLOCK = 1 << 20
#: The longest event handed to the bindings (job ad events are the longest real ones: tens of KB).
MAX_EVENT_BYTES = 1 << 20
_END = b"\n...\n"            # an event's last line
#: (device, inode, size) -> (where the scan began, the long events from there): a log read in chunks is scanned once
_LONG: Dict[Tuple[int, int, int], Tuple[int, List[Tuple[int, int]]]] = {}


def _long_events(path: str, offset: int) -> List[Tuple[int, int]]:
    """(start, end) of each stretch from ``offset`` on with no event end for more than MAX_EVENT_BYTES: an
    over-long event (or junk) that the bindings must not read. It starts after the previous event's end
    and runs to the end of its own (or of the file).

    One pass of C-level ``find``/``rfind`` per SCAN_BLOCK: gaps inside one block are shorter than the limit,
    so only the first and last event end of each block matter.
    """
    st = os.stat(path)
    key = (st.st_dev, st.st_ino, st.st_size)
    cached = _LONG.get(key)
    if cached is not None and cached[0] <= offset:
        return [r for r in cached[1] if r[1] > offset]
    found: List[Tuple[int, int]] = []
    last = offset                  # where the event being scanned began (just after the previous end)
    with open(path, "rb") as handle:
        at = offset
        handle.seek(max(0, offset - 1))
        carry = handle.read(1) if offset else b"\n"      # an event end needs the newline before it
        while at < st.st_size:
            block = carry + handle.read(SCAN_BLOCK)
            base = at - len(carry)                        # file offset of block[0]
            first = block.find(_END)
            if first >= 0:
                end = base + first + len(_END)            # just after the "...\n" line
                if end - last > MAX_EVENT_BYTES:
                    found.append((last, end))
                last = base + block.rfind(_END) + len(_END)
            at = base + len(block)
            carry = block[-(len(_END) - 1):]
    if st.st_size - last > MAX_EVENT_BYTES:
        found.append((last, st.st_size))
    if len(_LONG) > 64:
        _LONG.clear()
    _LONG[key] = (offset, found)
    return found


def _next_header(path: str, offset: int, after: int) -> Tuple[Optional[int], int]:
    """(offset of the next event header at or after ``offset + after``, file size), read block by block
    (junk early in a big log must not mean reading the rest of it into memory)."""
    size = os.path.getsize(path)
    with open(path, "rb") as handle:
        at = offset
        while at < size:
            handle.seek(at)
            block = handle.read(SCAN_BLOCK + 64)   # the overlap: a header cut by the block's end
            if at > 0:
                handle.seek(at - 1)
                block = handle.read(1) + block      # so that ^ knows whether ``at`` starts a line
                skip = 1
            else:
                skip = 0
            match = HEADER.search(block, skip + max(0, offset + after - at))
            if match:
                return at - skip + match.start(), size
            at += SCAN_BLOCK
    return None, size


CHECKPOINT_EVERY = 1024   # events between two offsets noted while reading (see _run)


def _run(htcondor: Any, path: str, offset: int, result: ReadResult, limit: int,
         stop_at: Optional[int] = None) -> Tuple[int, bool]:
    """Read from ``offset`` until the bindings stop; return where, and whether on an unknown event code
    (the bindings have read past that event: carry on from there).

    Otherwise, where they stopped is not trusted: on junk or a damaged event the bindings may read on
    to a later ``...`` line (a cut-short event has none of its own), swallowing complete events, and
    how far differs from run to run.  So the offset returned is the end of the last event they did
    return (re-read from the last offset noted, at most CHECKPOINT_EVERY events back): the caller
    resumes at the first event header from there, and no complete event is lost.

    ``stop_at``: an over-long event starts there; the bindings are stopped before they read it. Each event
    they return is at most 2 * MAX_EVENT_BYTES long (longer ones are in ``_long_events``), so their offset is
    asked for only when that many more events could reach ``stop_at``.
    """
    failure = getattr(htcondor, "HTCondorException", RuntimeError)
    if stop_at is not None and offset >= stop_at:
        return offset, False
    log = _open_at(htcondor, path, offset)
    checkpoint, since = offset, 0
    unchecked = 0 if stop_at is None else (stop_at - offset) // (2 * MAX_EVENT_BYTES)
    append = result.events.append
    try:
        for raw in log.events(stop_after=0):
            append(_event(raw))
            since += 1
            if len(result.events) >= limit:
                result.more = True
                return int(log.__getstate__()[1]), False
            if since == CHECKPOINT_EVERY:
                checkpoint, since = int(log.__getstate__()[1]), 0
            if stop_at is not None:
                if unchecked:
                    unchecked -= 1
                else:
                    at = int(log.__getstate__()[1])
                    if at >= stop_at:
                        return at, False
                    unchecked = (stop_at - at) // (2 * MAX_EVENT_BYTES)
    except ValueError as err:
        match = _UNKNOWN.match(str(err))
        if not match:
            raise
        code = int(match.group(1))
        result.unknown[code] = result.unknown.get(code, 0) + 1
        return int(log.__getstate__()[1]), True
    except failure as err:
        if "ULOG_RD_ERROR" not in str(err):
            raise
    stopped = int(log.__getstate__()[1])
    if stopped >= os.path.getsize(path):
        return stopped, False
    return _end_of_good(htcondor, path, checkpoint, since), False


def _end_of_good(htcondor: Any, path: str, offset: int, good: int) -> int:
    """The offset just after the ``good`` events that follow ``offset``."""
    log = _open_at(htcondor, path, offset)
    if good:
        for count, _ in enumerate(log.events(stop_after=0), 1):
            if count >= good:
                break
    return int(log.__getstate__()[1])


def _known_codes(htcondor: Any) -> None:
    if not _KNOWN:
        _KNOWN.update(int(member) for member in htcondor.JobEventType)


def read_events(path: str, offset: int = 0, limit: int = 1 << 62) -> ReadResult:
    """Every readable event of ``path`` from ``offset`` (at most ``limit``: then ``more`` is set and
    ``offset`` is where to go on); nothing readable is lost.

    Raises ``ValueError`` (one line) when the file cannot be read at all, or holds no event header.
    """
    result = _read(path, offset, limit)
    if not result.events and not result.unknown and offset == 0:
        first, size = _next_header(path, 0, 0)
        if first is None and size > 0:
            raise ValueError(f"{path}: no HTCondor job event in this file")
    return result


def _read(path: str, offset: int, limit: int) -> ReadResult:
    """``read_events`` but for the check that the file is an event log at all."""
    htcondor = bindings()
    _known_codes(htcondor)
    failure = getattr(htcondor, "HTCondorException", RuntimeError)
    result = ReadResult(offset=offset)
    at = offset
    long_events = _long_events(path, offset)
    while True:
        while long_events and long_events[0][1] <= at:
            long_events.pop(0)
        if long_events and long_events[0][0] <= at:     # an over-long event starts here: skip it whole
            start, end = long_events.pop(0)
            result.skipped.append((start, end - start))
            at = end
            if at >= os.path.getsize(path):
                result.offset = at
                return result
            continue
        stop_at = long_events[0][0] if long_events else None
        try:
            stopped, unknown = _run(htcondor, path, at, result, limit, stop_at)
        except (OSError, RuntimeError, failure) as err:
            raise ValueError(f"{path}: not a readable HTCondor event log ({err})") from None
        if result.more:
            result.offset = stopped
            return result
        if unknown or (stop_at is not None and stopped >= stop_at):
            at = stopped
            continue
        nxt, size = _next_header(path, stopped, 0)
        if stopped >= size or nxt is None:
            tail = size - stopped
            if tail and not _complete(path, stopped):
                result.partial_tail = tail
            elif tail:
                result.bad += 1
                result.bad_bytes += tail
                stopped = size
            result.offset = stopped
            return result
        if nxt == stopped:
            # the bindings could not read the event that starts here
            later, size = _next_header(path, stopped, 1)
            if later is None:
                if _complete(path, stopped):   # a whole but unreadable last event: skip it
                    result.bad += 1
                    result.bad_bytes += size - stopped
                    result.offset = size
                else:                          # still being written: read it next time
                    result.partial_tail = size - stopped
                    result.offset = stopped
                return result
            nxt = later
        result.bad += 1
        result.bad_bytes += nxt - stopped
        at = nxt


def _complete(path: str, offset: int) -> bool:
    """Whether the bytes from ``offset`` hold a finished event (its ``...`` line, within the next MB)."""
    with open(path, "rb") as handle:
        handle.seek(offset)
        rest = handle.read(SCAN_BLOCK)
    return b"\n...\n" in rest or rest.startswith(b"...\n")


def bare_read(path: str) -> int:
    """The bindings' plain read loop (the benchmark's yardstick): how many events."""
    htcondor = bindings()
    count = 0
    for _ in htcondor.JobEventLog(path).events(stop_after=0):
        count += 1
    return count


#: The bytes of a log's beginning that identify it (``log_head``).
HEAD_BYTES = 512


def log_head(path: str, length: int = HEAD_BYTES) -> str:
    """``N:digest`` of the first N bytes (at most ``length``): a log that still begins with them is the same
    log grown; N is below HEAD_BYTES while the log was short, so a growing small log stays the same log."""
    with open(path, "rb") as handle:
        data = handle.read(length)
    return f"{len(data)}:{hashlib.sha256(data).hexdigest()}"
