"""One record per glidein: the one its factory's files give merged with the one its live trace gives.

Why a merge and not "the files' record wins": a glidein the factory knows by
its Condor-G job only (queued, or running and its ``.out`` not back yet) is
known to the trace by everything it ran, and a glidein whose ``.out`` was read
may have been traced with what the files only assume (its final CPUs and
memory) or lack (its jobs, when HTCondor left no per-job data). The rule, also
in docs/accounting.md ("One record per glidein"):

- the files' record is the base: GlideinWMS's own figures (``gwms``), the
  Condor-G times (submission, hand-over to the CE, holds) and, once the
  ``.out`` was read, the glidein's status, failed script, scripts, times,
  HTCondor's start and end, its jobs and completeness;
- the trace fills what the files lack: identity fields they miss, CPUs and
  memory they only assumed, GPUs they did not name, jobs when they have none,
  scripts when they have no per-script results (no ``.err``); a value taken
  from the trace is the node's claim, and ``notes`` says so (a worker node is
  not trusted: the files, when read, decide status, times and completeness);
- while the ``.out`` has not been read, the run is the trace's: start, end,
  status, failed script, scripts, HTCondor, jobs; the record stays
  ``incomplete`` with the files' reason ("no .out file (yet)") and the trace's
  (no end yet) — complete once the ``.out``/``.err`` are read.

The canonical categories are cut again from the merged times, resources and
jobs. The merge is a function of the two records only, so the store can make
it again, whichever came first and however often either is re-sent.
"""

from __future__ import annotations

import copy
from typing import List

from .canonical import CATEGORIES
from .from_trace import NO_OUT, empty_category
from .record import CPUS_ASSUMED, MEMORY_ASSUMED, GlideinRecord, reaccount

_IDENTITY = ("factory", "schedd", "cluster", "proc", "site", "entry", "frontend", "glidein_uuid")
MERGED = "merged with its live trace (gwtrace on the node)"


def _assumed(notes: List[str], prefix: str) -> bool:
    return any(note.startswith(prefix) for note in notes)


def _resources(rec: GlideinRecord, traced: GlideinRecord) -> None:
    """CPUs, memory and GPUs the trace knows where the files only assumed them."""
    for field, prefix in (("cpus", CPUS_ASSUMED), ("memory_mb", MEMORY_ASSUMED)):
        if _assumed(rec.notes, prefix) and not _assumed(traced.notes, prefix):
            setattr(rec, field, getattr(traced, field))
            rec.notes = [note for note in rec.notes if not note.startswith(prefix)]
            rec.notes.append(f"{field} {getattr(traced, field)} from its live trace (as the node reported it)")
    if not rec.gpus and traced.gpus:
        rec.gpus = traced.gpus
        rec.notes.append(f"gpus {traced.gpus} from its live trace (as the node reported it)")


def _files_category(files: GlideinRecord) -> str:
    """The category the files gave a glidein that ran no known job (all its time is in it)."""
    canon = files.canonical or {}
    best = max(CATEGORIES, key=lambda c: canon.get(c) or 0.0)
    return best if (canon.get(best) or 0.0) > 0 else "validation_fail"


def merge_records(files: GlideinRecord, traced: GlideinRecord) -> GlideinRecord:
    """The glidein's one record from its files' record and its trace's (module docstring)."""
    rec = copy.deepcopy(files)
    for field in _IDENTITY:
        if getattr(rec, field) is None:
            setattr(rec, field, getattr(traced, field))
    _resources(rec, traced)
    if rec.submitted is None:
        rec.submitted, rec.ce_submitted = traced.submitted, traced.ce_submitted
    if files.read_out:
        if not rec.jobs and traced.jobs:
            rec.jobs = copy.deepcopy(traced.jobs)
            rec.notes.append("jobs from its trace: the files have no per-job data")
        if not rec.scripts and traced.scripts:
            rec.scripts = copy.deepcopy(traced.scripts)
        empty = _files_category(files)
        reaccount(rec, lambda: empty)
    else:
        rec.started = traced.started if traced.started is not None else files.started
        rec.ended = traced.ended if traced.ended is not None else files.ended
        if traced.status != "UNKNOWN":
            rec.status = traced.status
        rec.failed_script, rec.condor_start, rec.condor_end = traced.failed_script, traced.condor_start, \
            traced.condor_end
        rec.scripts, rec.jobs = copy.deepcopy(traced.scripts), copy.deepcopy(traced.jobs)
        for reason in traced.incomplete_reasons:
            if reason != NO_OUT:        # the files' own reason says it
                rec.mark_incomplete(reason)
        reaccount(rec, lambda: empty_category(rec))
    rec.notes.append(MERGED)
    return rec
