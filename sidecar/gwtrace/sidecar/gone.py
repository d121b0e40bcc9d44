"""Spans of a traced bash that was replaced by a program that is not bash.

A bash traced through BASH_ENV ends its spans in its EXIT trap, and a bash
it ``exec``s takes them over (GWTRACE_AUTO_OPEN, same pid). A bash that
``exec``s anything else (pyenv's shims: ``exec pyenv exec python``; the last
command of ``bash -c``) runs nothing of ours again: its spans stayed open until
the sidecar stopped, incomplete. Nothing on bash's per-command path can see
the ``exec`` coming at the functions level, so the sidecar closes them, at no
cost to bash: when the process of an open *script* span (a bash's own span,
``gwtrace.kind=script``, which its EXIT trap always ends) is gone, that bash
never ran its EXIT trap. Its script spans and the spans opened under them by
the same process end then, at the time the sidecar saw the process gone
(within ``CHECK_INTERVAL_S`` while it is idle; at stop otherwise), with
status UNSET: what the replacing program did is not bash's to know. They say
so: ``gwtrace.process_gone=true``, and when the sidecar saw the process run
another program, ``process.exec=true`` and ``gwtrace.replaced_by`` (its
executable's name). A bash killed by SIGKILL looks the same, without the
latter two. Spans a bash opened for another process to end (the glidein span
of gwtrace_setup.sh, ended by its clean-up hook) are not under its script
span and are left alone.
"""

from __future__ import annotations

import os
from typing import Dict, Iterable, List, Set

from gwtrace.sidecar.assembler import Assembler, pid_alive

from gwtrace.wire.span import SpanRecord

#: Seconds between two looks at the processes of open script spans (idle sidecar).
CHECK_INTERVAL_S = 0.5


def executable_name(pid: int) -> str:
    """The basename of the program a process runs now, "" if it cannot be read."""
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe")).removesuffix(" (deleted)")
    except OSError:
        return ""


class GoneProcesses:
    """Which traced bash processes are gone, and what replaced those still running."""

    def __init__(self) -> None:
        #: pid -> the program it was seen running instead of bash
        self.replaced: Dict[int, str] = {}

    def dead(self, assembler: Assembler) -> Set[int]:
        """The processes of open script spans that are gone; notes those now running another program.

        Call it *before* reading the log to its end: what a process wrote
        before it died is then read before its spans are judged.
        """
        gone: Set[int] = set()
        for pid in {s.pid for s in assembler.open.values() if s.attributes.get("gwtrace.kind") == "script"}:
            if not pid_alive(pid):
                gone.add(pid)
            elif pid not in self.replaced:
                name = executable_name(pid)
                if name and not name.startswith("bash"):
                    self.replaced[pid] = name
        for pid in set(self.replaced) - {s.pid for s in assembler.open.values()}:
            del self.replaced[pid]            # ended by a bash after all: forget it
        return gone

    def end(self, assembler: Assembler, pids: Iterable[int], now_us: int) -> List[SpanRecord]:
        """End the script spans of these (gone) processes that are still open, and the spans under them."""
        done: List[SpanRecord] = []
        for pid in pids:
            mine = {key: s for key, s in assembler.open.items() if s.pid == pid}
            under = {s.span_id for s in mine.values() if s.attributes.get("gwtrace.kind") == "script"}
            grew = True
            while grew:                        # the subtree: a few spans, a few passes
                more = {s.span_id for s in mine.values() if s.parent_id in under} - under
                under |= more
                grew = bool(more)
            replaced_by = self.replaced.pop(pid, "")
            for key, span in mine.items():
                if span.span_id in under:
                    del assembler.open[key]
                    done.append(_ended(span, now_us, replaced_by))
        if done:
            assembler.counters.add("spans_process_gone", len(done))
        return done


def _ended(span: SpanRecord, now_us: int, replaced_by: str) -> SpanRecord:
    """The span ended when its process was seen gone; its outcome unknown (UNSET)."""
    span.lines = None                  # ended here, not by a line: journaled by its fields
    span.end_us = max(now_us, span.start_us)
    span.attributes["gwtrace.process_gone"] = True
    if replaced_by:
        span.attributes["process.exec"] = True
        span.attributes["gwtrace.replaced_by"] = replaced_by
    return span
