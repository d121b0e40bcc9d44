"""The glidein's ``StartdHistoryLog``: one long-form job ClassAd per user job.

The startd appends the claim's job ad when a starter exits, followed by a
``*** Offset = ...`` banner.  Only the attributes accounting needs are kept;
values are read as ClassAd literals (numbers, booleans, quoted strings), which
is all those attributes ever hold, so no ClassAd library is needed here.
"""

import re
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Union

BANNER = "\n*** Offset = "
#: the attributes read; others are skipped unparsed (ClassAd names ignore case)
WANTED = ("ClusterId", "ProcId", "CompletionDate", "RemoteWallClockTime", "JobCurrentStartDate", "ExitBySignal",
          "ExitCode", "ExitSignal", "RequestCpus", "RequestMemory", "RequestGpus", "BadputCausedByPreemption",
          "JobStatus", "TraceParent")
WANTED_LINE = re.compile(r"\n(" + "|".join(WANTED) + r")[ \t]*=[ \t]*([^\n]*)", re.I)
#: one pass over a whole file: a banner (empty groups) or a wanted attribute line; a line
#: cannot be both, and no match crosses a newline, so this reads what splitting at the
#: banners and scanning each ad with ``WANTED_LINE`` read.
AD_LINE = re.compile(r"\n(?:\*\*\* Offset = |(" + "|".join(WANTED) + r")[ \t]*=[ \t]*([^\n]*))", re.I)
Value = Union[int, float, bool, str, None]


@dataclass
class JobRecord:
    """One user job the glidein ran (field names are part of the record contract)."""

    job_id: Optional[str]
    start: Optional[int]
    end: Optional[int]
    wall: Optional[int]
    exit_code: Optional[int]
    exit_signal: Optional[int]
    cpus: int
    memory_mb: int
    gpus: int
    preempted: bool
    job_status: Optional[int]
    traceparent: Optional[str] = None

    def to_dict(self) -> Dict[str, Value]:
        """The JSON form used in ``GlideinRecord.jobs``."""
        return dict(self.__dict__)


def literal(text: str) -> Value:
    """A ClassAd literal as a Python value; expressions stay text."""
    text = text.strip()
    if text.isdigit() and text.isascii():  # the common case, without raising
        return int(text)
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("undefined", "error", ""):
        return None
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1].replace('\\"', '"')
    for kind in (float,) if "." in text else (int, float):  # int() never takes a "."
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def iter_ads(text: str) -> Iterator[Dict[str, Value]]:
    """Each ad of a history file: the ``WANTED`` attributes, names lower-cased (banner lines skipped)."""
    ad: Dict[str, Value] = {}
    for name, value in AD_LINE.findall("\n" + text):
        if name:
            ad[name.lower()] = literal(value)
        elif ad:
            yield ad
            ad = {}
    if ad:
        yield ad


def _int(ad: Dict[str, Value], name: str) -> Optional[int]:
    value = ad.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def job_from_ad(ad: Dict[str, Value]) -> JobRecord:
    """A ``JobRecord`` from one history ad (start = this activation's start)."""
    cluster, proc = _int(ad, "clusterid"), _int(ad, "procid")
    end, wall = _int(ad, "completiondate"), _int(ad, "remotewallclocktime")
    start = _int(ad, "jobcurrentstartdate")
    if start is None and end is not None and wall is not None:
        start = end - wall
    by_signal = ad.get("exitbysignal") is True
    badput = _int(ad, "badputcausedbypreemption")
    traceparent = ad.get("traceparent")
    return JobRecord(
        job_id=f"{cluster}.{proc}" if cluster is not None and proc is not None else None,
        start=start,
        end=end,
        wall=wall,
        exit_code=None if by_signal else _int(ad, "exitcode"),
        exit_signal=_int(ad, "exitsignal") if by_signal else None,
        cpus=_int(ad, "requestcpus") or 1,
        memory_mb=_int(ad, "requestmemory") or 0,
        gpus=_int(ad, "requestgpus") or 0,
        preempted=bool(ad.get("badputcausedbypreemption") is True or (badput or 0) > 0),
        job_status=_int(ad, "jobstatus"),
        traceparent=traceparent if isinstance(traceparent, str) else None,
    )


def parse_startd_history(text: str) -> List[JobRecord]:
    """All jobs of a ``StartdHistoryLog``, in file order."""
    return [job_from_ad(ad) for ad in iter_ads(text)]
