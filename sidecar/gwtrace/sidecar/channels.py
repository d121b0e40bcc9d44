"""User jobs' own event logs: a job adds spans under its job span, and nothing else.

The glidein's event log (``events.log``) is written by the glidein's own
scripts. A user job gets another one: the job wrapper
(shim/gwtrace-job-wrapper) writes the job's span (``user_job``) into
``events.log`` and hands the job ``GWTRACE_SOCKET`` naming
``jobs/<trace id>-<span id>.log`` in the state directory, the span it may
grow. The file's name is the channel's root. From a job's log the sidecar
takes only:

- a ``B`` in the root's trace whose parent is the root or a span this log
  began;
- an ``E``, ``V`` or ``A`` for a span this log began.

Anything else (the glidein span's ``E`` a job forged, an attribute on the
job span itself, another trace) is skipped and counted as
``events_rejected_job``: a job cannot end, rename or flip the status of a
span it did not begin (docs/protocol.md, "Trust boundary").

State per log (checkpointed with the main log's offset): its offset and
inode, and the spans it began that may still be parents (the most recent
MAX_SPANS_KEPT).
"""

from __future__ import annotations

import os
import re
from typing import Dict, Iterator, List, Optional, Tuple

from gwtrace.sidecar.eventlog import EventLogReader
from gwtrace.wire.events import Event

JOBS_DIR = "jobs"
#: Where job wrappers register a job for resource sampling (resources.py): ``resources/<trace>-<span>``.
RESOURCES_DIR = "resources"
#: ``<32 hex trace id>-<16 hex span id>.log``
_NAME = re.compile(r"\A([0-9a-f]{32})-([0-9a-f]{16})\.log\Z")
#: Spans a job log began that are remembered as possible parents.
MAX_SPANS_KEPT = 10000


class JobChannel:
    """One job's event log: its reader and what it may name."""

    def __init__(self, path: str, trace_id: str, root: str, offset: int = 0,
                 inode: Optional[int] = None, spans: Optional[List[str]] = None) -> None:
        self.reader = EventLogReader(path, offset, inode)
        self.trace_id = trace_id
        self.root = root
        self.name = f"{trace_id}-{root}"      # the job's span: the key of its decision (enforce.py)
        self.began: Dict[str, None] = dict.fromkeys(spans or [])     # insertion-ordered set

    def allows(self, event: Event) -> bool:
        """True if this job may write ``event`` (and remember a span it begins)."""
        if event.kind == "B":
            if event.trace_id != self.trace_id or (event.parent_id != self.root and event.parent_id not in self.began):
                return False
            self.began[event.span_id] = None
            if len(self.began) > MAX_SPANS_KEPT:
                del self.began[next(iter(self.began))]
            return True
        return event.trace_id == self.trace_id and event.span_id in self.began

    def state(self) -> Dict[str, object]:
        return {"offset": self.reader.offset, "inode": self.reader.inode, "spans": list(self.began)}


class JobChannels:
    """The job logs of one state directory, found by listing ``jobs/``."""

    def __init__(self, directory: str, saved: Optional[Dict[str, Dict[str, object]]] = None) -> None:
        self.dir = os.path.join(directory, JOBS_DIR)
        self.channels: Dict[str, JobChannel] = {}
        for name, st in (saved or {}).items():
            m = _NAME.match(name)
            if m and isinstance(st, dict):
                self.channels[name] = JobChannel(
                    os.path.join(self.dir, name), m.group(1), m.group(2), int(st.get("offset", 0) or 0),
                    st.get("inode") if isinstance(st.get("inode"), int) else None,
                    [s for s in st.get("spans", []) if isinstance(s, str)])   # type: ignore[union-attr]

    def discover(self) -> None:
        """Pick up the job logs created since the last look."""
        try:
            names = os.listdir(self.dir)
        except OSError:
            return
        for name in names:
            if name not in self.channels:
                m = _NAME.match(name)
                if m:
                    self.channels[name] = JobChannel(os.path.join(self.dir, name), m.group(1), m.group(2))

    def __iter__(self) -> Iterator[JobChannel]:
        return iter(list(self.channels.values()))

    def pending_bytes(self) -> int:
        return sum(ch.reader.pending_bytes() for ch in self.channels.values())

    def state(self) -> Dict[str, Dict[str, object]]:
        return {name: ch.state() for name, ch in self.channels.items()}


def make_jobs_dir(directory: str) -> str:
    """``jobs/`` in the state directory (0700), where job wrappers create the jobs' logs."""
    path = os.path.join(directory, JOBS_DIR)
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def split_name(name: str) -> Optional[Tuple[str, str]]:
    """(trace id, root span id) of a job log's file name, or None."""
    m = _NAME.match(name)
    return (m.group(1), m.group(2)) if m else None


def make_resources_dir(directory: str) -> str:
    """``resources/`` in the state directory (0700), where job wrappers register their jobs'
    processes for resource sampling (resources.py); made before "ready", as ``jobs/``."""
    path = os.path.join(directory, RESOURCES_DIR)
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path
