"""The sidecar enforces the controller's decisions: what it holds in memory decides what it exports.

Jobs run as the pilot's Unix user, so a job can rewrite any file of the state
directory (the level files of the back channel, the answers in
``control/ask/``) and set ``GWTRACE_AUTO_LEVEL`` for its own bash. None of
that is what the sidecar obeys. It keeps, in this process only:

* the glidein's decision, handed over by ``sidecar start`` through a pipe
  made before the fork (never a file), then changed only by the back
  channel's ``level`` commands, which this process carries out itself;
* each job's decision, which this process's asker (ask.py) got from the
  controller, keyed by the job's channel (``<trace id>-<span id>``); a
  channel whose job never asked takes the back channel's level for later
  jobs, or ``off`` when the glidein is ``off``, and the glidein's sampled flag.

What is checked, for each span begun (the ``B`` event; its ``E``, ``V`` and
``A`` follow it out):

* a job not sampled, or decided ``off``: nothing of its channel (and not its
  ``user_job`` span when not sampled);
* a job at ``scripts``: no span of ``gwtrace.kind`` ``function`` or
  ``command``; at ``functions``: no ``command``. The kind is what the span
  says of itself, so a job can hide detail under another kind, not add a
  channel nor outlive its decision;
* the glidein not sampled: none of its scripts' spans; ``off``: only the
  ``glidein`` root span (which records the decision); a level caps kinds as
  for a job. What a job writes into ``events.log`` counts as the glidein's.

Everything dropped is counted as ``spans_dropped_control`` (``gwtrace sidecar
status``). With no decision at all (no controller, no command) nothing is
dropped: the factory's deployment decided.
"""

from __future__ import annotations

import json
import logging
import os
import select
import threading
import time
from collections import OrderedDict
from typing import Dict, NamedTuple, Optional

from gwtrace.wire.events import Event

log = logging.getLogger("gwtrace.sidecar.enforce")

LEVELS = ("off", "scripts", "functions", "commands")
_RANK = {name: i for i, name in enumerate(LEVELS)}
#: The least level at which a span of this ``gwtrace.kind`` is traced.
_NEEDS = {"function": _RANK["functions"], "command": _RANK["commands"]}
#: How long the reader waits for ``sidecar start`` to hand the glidein's decision over.
HANDOVER_S = 3.0
MAX_JOBS = 10000
MAX_DROPPED = 100000


class Verdict(NamedTuple):
    """One subject's decision as enforced: level None = no cap; sampled None = not decided."""

    level: Optional[str]
    sampled: Optional[bool]


def _level(value: object) -> Optional[str]:
    return value if isinstance(value, str) and value in _RANK else None


def span_kind(event: Event) -> object:
    """The ``gwtrace.kind`` a ``B`` event gives its span (what the span says of itself)."""
    for key, value in event.attributes:
        if key == "gwtrace.kind":
            return value
    return None


def allowed(verdict: Verdict, kind: object) -> bool:
    """May a span of ``gwtrace.kind`` ``kind`` be exported under ``verdict``?"""
    if verdict.sampled is False or verdict.level == "off":
        return False
    if verdict.level is None:
        return True
    need = _NEEDS.get(kind if isinstance(kind, str) else "", 0)
    return _RANK[verdict.level] >= need


class Policy:
    """The decisions this sidecar enforces; written by the asker and command threads, read by the reader."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.glidein = Verdict(None, None)
        self.glidein_trace: Optional[str] = None
        self.jobs_level: Optional[str] = None            # back channel, job null
        self.job_levels: Dict[str, str] = {}              # back channel, one job id
        self.jobs: "OrderedDict[str, Verdict]" = OrderedDict()   # channel name -> the job's decision
        self._root_seen = False
        self._waiting_until = 0.0
        self.dropped = 0

    # -- what sets the decisions ----------------------------------------------

    @property
    def active(self) -> bool:
        """Anything decided at all (else nothing is checked: the hot path stays as it was)."""
        return self.glidein != Verdict(None, None) or self.jobs_level is not None or bool(self.jobs) \
            or bool(self.job_levels)

    def set_glidein(self, level: object, sampled: object, trace_id: object = None) -> None:
        with self._lock:
            self.glidein = Verdict(_level(level), sampled if isinstance(sampled, bool) else None)
            if isinstance(trace_id, str) and len(trace_id) == 32:
                self.glidein_trace = trace_id
        log.info("the glidein's decision: level %s, sampled %s", self.glidein.level, self.glidein.sampled)

    def set_level(self, level: str, job: Optional[str]) -> None:
        """A back channel ``level`` command (commands.py): job None is the glidein's scripts and later jobs."""
        if _level(level) is None:
            return
        with self._lock:
            if job is None:
                self.glidein = self.glidein._replace(level=level)
                self.jobs_level = level
            else:
                self.job_levels[job] = level
                while len(self.job_levels) > MAX_JOBS:
                    del self.job_levels[next(iter(self.job_levels))]

    def set_job(self, channel: str, job_id: Optional[str], level: Optional[str], sampled: Optional[bool]) -> None:
        """A job's answer (ask.py), as the job wrapper applies it: the back channel's level first."""
        with self._lock:
            chosen = (self.job_levels.get(job_id or "") or self.jobs_level or _level(level))
            if chosen is None and self.glidein.level == "off":
                chosen = "off"                           # a site's off binds the jobs that did not hear it
            self.jobs[channel] = Verdict(chosen, sampled if sampled is not None else self.glidein.sampled)
            while len(self.jobs) > MAX_JOBS:
                self.jobs.popitem(last=False)

    def job(self, channel: str) -> Verdict:
        """The decision enforced on a job's channel (``<trace id>-<span id>``)."""
        found = self.jobs.get(channel)
        if found is not None:
            return found
        level = self.jobs_level or ("off" if self.glidein.level == "off" else None)
        return Verdict(level, self.glidein.sampled)

    # -- the hand-over from `sidecar start` ------------------------------------

    def receive(self, fd: int) -> None:
        """Read the glidein's decision from ``sidecar start``'s pipe in a thread; until it arrives (at
        most HANDOVER_S) ``waiting()`` is true and the glidein's log is not read."""
        self._waiting_until = time.monotonic() + HANDOVER_S
        threading.Thread(target=self._receive, args=(fd,), name="gwtrace-decision", daemon=True).start()

    def waiting(self) -> bool:
        return self._waiting_until > 0 and time.monotonic() < self._waiting_until

    def _receive(self, fd: int) -> None:
        data = b""
        try:
            deadline = time.monotonic() + HANDOVER_S
            while len(data) < 4096 and time.monotonic() < deadline:
                ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
                if not ready:
                    break
                chunk = os.read(fd, 4096)
                if not chunk:
                    break
                data += chunk
            if data.strip():
                got = json.loads(data.decode("utf-8").split("\n")[0])
                if isinstance(got, dict):
                    self.set_glidein(got.get("level"), got.get("sampled"), got.get("trace_id"))
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            log.warning("the glidein's decision was not handed over: %s", exc)
        finally:
            os.close(fd)
            self._waiting_until = 0.0

    # -- what the reader asks --------------------------------------------------

    def glidein_allows(self, event: Event) -> bool:
        """A ``B`` of the glidein's event log: the job wrappers' ``user_job`` spans follow their job."""
        kind = span_kind(event)
        if kind == "job":
            return self.job(f"{event.trace_id}-{event.span_id}").sampled is not False
        verdict = self.glidein
        if verdict.level == "off" and verdict.sampled is not False and event.name == "glidein" \
                and not self._root_seen and event.trace_id == (self.glidein_trace or event.trace_id):
            self._root_seen = True                        # the root records the decision
            return True
        return allowed(verdict, kind)


class DroppedSpans:
    """The spans whose ``B`` was dropped, so that their later events are dropped too (bounded)."""

    def __init__(self) -> None:
        self.keys: "OrderedDict[tuple, None]" = OrderedDict()

    def add(self, key: tuple) -> None:
        self.keys[key] = None
        if len(self.keys) > MAX_DROPPED:
            self.keys.popitem(last=False)

    def __contains__(self, key: object) -> bool:
        return key in self.keys
