"""User jobs of a glidein, and the accounting category of each.

Jobs come from the shipped ``StartdHistoryLog`` (one ad per job, with
requested resources and ``BadputCausedByPreemption``) or, without it, from
parse_starterlog's lines in the ``.out`` stats block (times in the node's
local time without a year: placed using the ``Condor starting`` marker, which
carries both the local time and the epoch).
"""

import calendar
import re
import time
from typing import List, Optional, Sequence, Tuple

from .canonical import UNIT_MB, Interval
from .errfile import ErrFile
from .outfile import OutFile, StarterJob
from .startd_history import JobRecord, parse_startd_history

#: a failing job shorter than this is an "early" failure (docs/accounting.md)
EARLY_SECONDS = 120
#: a glidein with at least this many early failures, making up at least half of its jobs, is a black hole
BLACKHOLE_MIN_JOBS = 2
#: a job ending by signal this close to HTCondor's end was killed by the pilot's end
PREEMPT_WINDOW = 60

LOCAL = re.compile(r"\w{3} (\w{3}) +(\d+) (\d\d):(\d\d):(\d\d) \S+ (\d{4}) \((\d+)\)")
MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
                                      "Dec"), 1)}


def local_offset(marker: Optional[str]) -> Optional[Tuple[int, int]]:
    """(UTC offset in seconds, year) of the node, from ``Condor starting <date> (<epoch>)``."""
    found = LOCAL.search(marker or "")
    if not found or found.group(1) not in MONTHS:
        return None
    mon, day, hh, mm, ss, year, epoch = found.groups()
    naive = calendar.timegm((int(year), MONTHS[mon], int(day), int(hh), int(mm), int(ss), 0, 0, 0))
    return naive - int(epoch), int(year)


def starter_epoch(stamp: Optional[str], offset: int, year: int, after: int) -> Optional[int]:
    """Epoch of a parse_starterlog ``MM/DD[/YY] HH:MM:SS`` stamp (year rolls over at new year)."""
    if not stamp:
        return None
    try:
        date, clock = stamp.split(" ")
        parts = date.split("/")
        if len(parts) == 3:
            year = 2000 + int(parts[2])
        wall = time.strptime(f"{year} {parts[0]} {parts[1]} {clock}", "%Y %m %d %H:%M:%S")
    except ValueError:
        return None
    epoch = calendar.timegm(wall) - offset
    if len(parts) == 2 and epoch < after - 86400:
        return starter_epoch(stamp, offset, year + 1, after)
    return epoch


def _from_starter(job: StarterJob, offset: int, year: int, after: int) -> JobRecord:
    start = starter_epoch(job.start, offset, year, after)
    end = starter_epoch(job.end, offset, year, after)
    if start is None and end is not None and job.duration is not None:
        start = end - job.duration
    code = int(job.value) if job.reason == "status" and job.value and job.value.lstrip("-").isdigit() else None
    signal = int(job.value) if job.reason == "signal" and job.value and job.value.isdigit() else None
    return JobRecord(job_id=job.job_id, start=start, end=end, wall=job.duration, exit_code=code,
                     exit_signal=signal, cpus=1, memory_mb=int(UNIT_MB), gpus=0, preempted=False, job_status=None)


def jobs_from_files(out: Optional[OutFile], err: Optional[ErrFile]) -> Tuple[List[JobRecord], List[str]]:
    """The glidein's user jobs and notes on what had to be assumed."""
    history = err.log("StartdHistoryLog") if err is not None else None
    if history:
        return parse_startd_history(history.decode("utf-8", "replace")), []
    starter = out.stats.jobs if out and out.stats else []
    if not starter:
        return [], []
    local = local_offset(out.condor_start_text if out else None)
    if local is None:
        return [], ["starter jobs present but the node's local time is unknown: jobs not placed in time"]
    jobs = [_from_starter(j, local[0], local[1], out.condor_start or 0) for j in starter]
    return jobs, ["jobs from the .out stats block: 1 core + 2 GB assumed per job (no StartdHistoryLog)"]


def _failed(job: JobRecord) -> bool:
    return job.exit_signal is not None or (job.exit_code is not None and job.exit_code != 0)


def is_preempted(job: JobRecord, condor_end: Optional[float]) -> bool:
    """Killed by the pilot's end: the startd says so, or it never ended, or a signal at HTCondor's end."""
    if job.preempted or job.end is None:
        return True
    return job.exit_signal is not None and condor_end is not None and job.end >= condor_end - PREEMPT_WINDOW


def classify_jobs(jobs: Sequence[JobRecord], condor_end: Optional[float]) -> List[Interval]:
    """Accounting intervals for the jobs that can be placed in time, each with its category."""
    early = [j for j in jobs if _failed(j) and not is_preempted(j, condor_end) and (j.wall or 0) < EARLY_SECONDS]
    blackhole = len(early) >= BLACKHOLE_MIN_JOBS and 2 * len(early) >= len(jobs)
    out = []
    for job in jobs:
        if job.start is None:
            continue
        end = job.end if job.end is not None else condor_end
        if end is None:
            continue
        if is_preempted(job, condor_end):
            category = "preemption_badput"
        elif blackhole and job in early:
            category = "misconfig_badput"
        else:
            category = "goodput"
        out.append(Interval(job.start, end, job.cpus, job.memory_mb, job.gpus, category))
    return out
