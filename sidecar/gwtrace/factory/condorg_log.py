"""The factory's Condor-G event logs (``condor_activity_*.log``), via HTCondor's bindings.

HTCondor's own reader handles both timestamp formats (legacy ``MM/DD
HH:MM:SS`` and the ISO default since 8.9) that GlideinWMS's hand-written
parser confuses.  For glideins, 000 = the factory submitted it, 027 = handed
to the CE, 001 = running at the site, 005 = ended, 009 = removed, 012 = held.
"""

import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple


def bindings() -> Any:
    """HTCondor's Python bindings (htcondor2, or a distribution's htcondor); RuntimeError says how to get them."""
    try:
        import htcondor2 as htcondor  # the wheels on the package index provide htcondor2
    except ImportError:
        try:
            import htcondor  # type: ignore[no-redef]  # distribution packages still name it htcondor
        except ImportError:
            raise RuntimeError(
                "reading condor_activity logs needs HTCondor's Python bindings: pip install 'gwtrace[factory]'"
            ) from None
    return htcondor


@dataclass
class Hold:
    """One hold of the glidein's Condor-G job."""

    time: int
    reason: str
    code: Optional[int]
    subcode: Optional[int]


@dataclass
class CondorGJob:
    """The Condor-G life of one glidein (epoch seconds)."""

    cluster: int
    proc: int
    submitted: Optional[int] = None
    grid_submitted: Optional[int] = None
    running: Optional[int] = None  # the last 001, as GlideinWMS takes it
    terminated: Optional[int] = None
    removed: Optional[int] = None
    exit_code: Optional[int] = None
    holds: List[Hold] = field(default_factory=list)
    last_event: Optional[int] = None

    @property
    def ended(self) -> Optional[int]:
        """End of the Condor-G job: terminated, else removed."""
        return self.terminated if self.terminated is not None else self.removed


def apply_event(job: CondorGJob, kind: int, when: int, exit_code: Any = None, hold: Optional[Hold] = None) -> None:
    """One Condor-G event of ``kind`` at ``when`` into the job's life, read from a log here or replayed
    from the store (``states.condorg_jobs``): the exit code of a termination (5), the hold of a hold (12)."""
    if kind == 0 and job.submitted is None:
        job.submitted = when
    elif kind == 27 and job.grid_submitted is None:
        job.grid_submitted = when
    elif kind == 1:
        job.running = when
    elif kind == 5:
        job.terminated, job.exit_code = when, exit_code
    elif kind == 9:
        job.removed = when
    elif kind == 12 and hold is not None:
        job.holds.append(hold)
    job.last_event = when


def _apply(job: CondorGJob, kind: int, when: int, event: Any) -> None:
    hold = (Hold(when, str(event.get("HoldReason", "")), event.get("HoldReasonCode"), event.get("HoldReasonSubCode"))
            if kind == 12 else None)
    apply_event(job, kind, when, event.get("ReturnValue") if kind == 5 else None, hold)


def read_condorg_log(path: str, jobs: Optional[Dict[Tuple[int, int], CondorGJob]] = None
                     ) -> Dict[Tuple[int, int], CondorGJob]:
    """Add every job of one event log to ``jobs`` (keyed by (cluster, proc)).

    Raises ``ValueError`` with one line if the file is not an event log.
    """
    htcondor = bindings()
    failure = getattr(htcondor, "HTCondorException", RuntimeError)
    jobs = {} if jobs is None else jobs
    count = 0
    try:
        for event in htcondor.JobEventLog(path).events(stop_after=0):
            key = (int(event.cluster), int(event.proc))
            job = jobs.setdefault(key, CondorGJob(*key))
            _apply(job, int(event.type), int(event.timestamp), event)
            count += 1
    except (OSError, RuntimeError, failure) as err:
        raise ValueError(f"{path}: not a readable HTCondor event log ({err})") from None
    if count == 0 and os.path.getsize(path) > 0:
        raise ValueError(f"{path}: no HTCondor job event in this file")
    return jobs
