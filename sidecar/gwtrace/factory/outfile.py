"""Parse a glidein's ``job.C.P.out`` (stdout): markers, header, stats blocks.

One pass over the bytes finds every ``=== ... ===`` marker line; the rest
(header, glidein_config dump, XML result) is sliced out by position.  Working
on bytes with compiled regexes keeps parsing as fast as GlideinWMS's own
mmap-based ``_extract_log_data`` while extracting much more.
"""

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from .xmlresult import MAX_XML_BYTES

MARKER = re.compile(rb"=== ([A-Z][^\n]*?) ===")
EPOCH = re.compile(rb"\((\d{9,11})\)")
AFTER = re.compile(rb"after (\d+)$")
CODE_AFTER = re.compile(rb" with code (\d+) after (\d+)$")
VALIDATING = re.compile(rb" after validating for (\d+)$")
ACTIVATIONS = re.compile(rb"Total number of activations/claims: (\d+)")
#: header lines printed by glidein_startup.sh (``name   = 'value'``) that the record uses
HEADER_KEYS = (b"condorg_cluster", b"condorg_subcluster", b"condorg_schedd", b"glidein_uuid", b"glidein_factory",
               b"glidein_name", b"glidein_entry", b"client_name", b"client_group")
HEADER_VALUE = re.compile(rb"\s*= '([^'\n]*)'")
START_LINE = re.compile(rb"^Starting glidein_startup\.sh at [^\n]*\((\d+)\)", re.M)
#: a count line as the factory's regex reads it; ``.`` never crosses a newline and the
#: greedy ``.*utilization`` reaches the line's last count, so ``finditer`` over a whole
#: section gives exactly one ``search`` per line (the first ``Total`` that matches).
COUNT = re.compile(rb"Total(.*)jobs (\d+) .*utilization (\d+)")
JOB_START = re.compile(rb"\n(\d\d/\d\d(?:/\d\d)?) (\d\d:\d\d:\d\d) Starting job (\S+) from (\S+)")
JOB_END = re.compile(
    rb"\n(\d\d/\d\d(?:/\d\d)?) (\d\d:\d\d:\d\d) Terminated job (\S+) from (\S+) (\S+) (\S+) duration (-?\d+)"
)
NORMALIZATION = re.compile(rb"Normalization \[parallelism\] factor (\d+)")

#: glidein_config keys kept from the dumps (values can be long; the rest is unused).
CONFIG_KEYS = (
    "GLIDEIN_UUID", "GLIDEIN_Site", "GLIDEIN_Entry_Name", "GLIDEIN_Factory", "GLIDEIN_Name", "GLIDEIN_Client",
    "GLIDECLIENT_Name", "GLIDECLIENT_Group", "GLIDEIN_CPUS", "GLIDEIN_ESTIMATED_CPUS", "GLIDEIN_MaxMemMBs",
    "GLIDEIN_GPUS", "GLIDEIN_ResourceName", "CONDORG_SCHEDD", "CONDORG_CLUSTER", "CONDORG_SUBCLUSTER",
    "GLIDEIN_Max_Walltime", "GLIDEIN_Retire_Time",
)


def _family(prefix: str) -> bytes:
    """Alternation of the kept keys starting with ``prefix``, longest first."""
    rests = sorted((k[len(prefix):] for k in CONFIG_KEYS if k.startswith(prefix)), key=len, reverse=True)
    return re.escape(prefix.encode()) + b"(?:" + "|".join(rests).encode() + b")"


#: one pass for every kept key: a line holds at most one key (keys have no space), so
#: a single alternation finds the same lines as one pattern per key family did.
CONFIG_LINE = re.compile(b"\n(" + _family("GLIDE") + b"|" + _family("CONDORG_") + b") ([^\n]*)")


def markers(data: bytes, start: int = 0) -> List[Tuple[int, int, bytes]]:
    """``(start, end, text)`` of every ``=== ... ===`` marker from byte ``start`` on.

    Same matches as ``MARKER.finditer``: a marker begins at ``=== `` and an
    upper-case letter and ends at the first `` ===`` of its line, which
    ``bytes.find`` reaches far faster than the regex engine's scan.
    """
    found = []
    size = len(data)
    at = data.find(b"=== ", start)
    while at >= 0:
        close = -1
        if at + 4 < size and 65 <= data[at + 4] <= 90:  # [A-Z]
            eol = data.find(b"\n", at + 5)
            close = data.find(b" ===", at + 5, size if eol < 0 else eol)
        if close < 0:
            at = data.find(b"=== ", at + 1)
            continue
        found.append((at, close + 4, data[at + 4 : close]))
        at = data.find(b"=== ", close + 4)
    return found


@dataclass
class StarterJob:
    """One user job as printed by parse_starterlog.awk inside ``Stats of``."""

    job_id: str
    start: Optional[str] = None  # "MM/DD HH:MM:SS" as printed (no year)
    end: Optional[str] = None
    reason: Optional[str] = None  # status | signal | other
    value: Optional[str] = None
    duration: Optional[int] = None


@dataclass
class SlotStats:
    """The ``=== Stats of <slot> ===`` section as GlideinWMS reads it.

    ``counts`` is first-match per name (``Total``, ``goodZ``...), exactly the
    factory's rule, so ``Total`` comes from the ``(Real)`` line when present.
    """

    slot: str
    counts: Dict[str, Tuple[int, int]] = field(default_factory=dict)
    real_format: bool = False
    normalization: Optional[int] = None
    jobs: List[StarterJob] = field(default_factory=list)


@dataclass
class OutFile:
    """Everything gwtrace reads from one ``.out``."""

    size: int = 0
    started: Optional[int] = None
    header: Dict[str, str] = field(default_factory=dict)
    config: Dict[str, str] = field(default_factory=dict)
    validation_duration: Optional[int] = None
    last_script_start: Optional[int] = None
    condor_started: bool = False
    condor_start: Optional[int] = None
    condor_start_text: Optional[str] = None  # the marker, for the node's local time offset
    condor_end: Optional[int] = None
    condor_duration: Optional[int] = None
    stats: Optional[SlotStats] = None
    activations: Optional[int] = None
    last_script_end: Optional[int] = None
    last_script_code: Optional[int] = None
    glidein_end: Optional[int] = None
    glidein_code: Optional[int] = None
    glidein_duration: Optional[int] = None
    xml: Optional[bytes] = None


def _epoch(text: bytes) -> Optional[int]:
    found = EPOCH.search(text)
    return int(found.group(1)) if found else None


def _first(markers: List[Tuple[int, int, bytes]], prefix: bytes, pos: int) -> Optional[Tuple[int, int, bytes]]:
    """First marker at or after byte ``pos`` whose text starts with ``prefix``."""
    for marker in markers:
        if marker[0] >= pos and marker[2].startswith(prefix):
            return marker
    return None


def parse_counts(content: bytes, stats: SlotStats) -> None:
    """Fill ``stats.counts`` (first match per name) from a stats section."""
    for found in COUNT.finditer(content):
        name = found.group(1).decode("utf-8", "replace")
        name = "Total" if name == " " else name[1:-1]
        if name not in stats.counts:
            stats.counts[name] = (int(found.group(2)), int(found.group(3)))
        line_start = content.rfind(b"\n", 0, found.start()) + 1
        if content.startswith(b"(Real)", line_start):
            stats.real_format = True


def parse_stats(content: bytes, slot: str) -> SlotStats:
    """Parse one stats section: counts, normalization factor and per-job lines."""
    stats = SlotStats(slot=slot)
    content = b"\n" + content
    parse_counts(content, stats)
    norm = NORMALIZATION.search(content)
    stats.normalization = int(norm.group(1)) if norm else None
    jobs: Dict[str, StarterJob] = {}
    for day, clock, jid, _src in JOB_START.findall(content):
        job = StarterJob(job_id=jid.decode(), start=(day + b" " + clock).decode())
        jobs[job.job_id] = job
        stats.jobs.append(job)
    for day, clock, jid_raw, _src, reason, value, duration in JOB_END.findall(content):
        jid = jid_raw.decode()
        job = jobs.pop(jid, None)
        if job is None:
            job = StarterJob(job_id=jid)
            stats.jobs.append(job)
        job.end = (day + b" " + clock).decode()
        job.reason, job.value = reason.decode(), value.decode()
        job.duration = int(duration)
    return stats


class _Walk:
    """The factory's sequential search: each marker is looked for after the previous one.

    Markers are collected from the first ``Last script starting`` on (every
    later search starts there) unless the glidein never got that far.
    """

    def __init__(self, data: bytes, start: int = 0) -> None:
        self.data = data
        self.start = start
        self.markers = markers(data, start)
        self.pos = 0

    def searches_from(self) -> int:
        """Where a search for a file's first ``=== ...`` text may start.

        From the walk's start when no ``===`` comes before it (the usual
        case, checked with one fast ``find``), else from byte 0.
        """
        if self.start > 0 and self.data.find(b"===", 0, self.start + 2) < 0:
            return self.start
        return 0

    def take(self, prefix: bytes) -> Optional[Tuple[int, int, bytes]]:
        """The next marker with ``prefix`` after the cursor; moves the cursor past it."""
        found = _first(self.markers, prefix, self.pos)
        if found is not None:
            self.pos = found[1] + 1
        return found


def _read_stats(walk: _Walk, out: OutFile) -> None:
    """First ``Stats of`` after Condor's end, up to the *last* ``End Stats of``.

    That span (greedy, across slots) and the skip of slots named ``...1`` are
    the factory's rules, kept so its figures come out the same.
    """
    begin = _first(walk.markers, b"Stats of ", walk.pos)
    if begin is None or b" " in begin[2][9:]:
        return
    ends = [m for m in walk.markers if m[0] >= begin[1] and m[2].startswith(b"End Stats of ") and b" " not in m[2][13:]]
    if not ends:
        return
    slot = begin[2][9:].decode("utf-8", "replace")
    walk.pos = ends[-1][1] + 1
    content = walk.data[begin[1] : ends[-1][0]]
    out.stats = SlotStats(slot=slot) if slot.endswith("1") else parse_stats(content, slot)


def _read_condor(walk: _Walk, out: OutFile) -> None:
    start = walk.take(b"Condor starting")
    if start is None:
        return
    out.condor_started = True
    out.condor_start = _epoch(start[2])
    out.condor_start_text = start[2].decode("utf-8", "replace")
    end = walk.take(b"Condor ended")
    if end is None:
        return
    after = AFTER.search(end[2])
    if after is None:  # the factory's regex needs "after N": keep looking as it does
        walk.pos = start[1] + 1
        end = next((m for m in walk.markers if m[0] >= walk.pos and m[2].startswith(b"Condor ended")
                    and AFTER.search(m[2])), None)
        if end is None:
            return
        walk.pos = end[1] + 1
        after = AFTER.search(end[2])
    out.condor_end = _epoch(end[2])
    out.condor_duration = int(after.group(1))
    out.stats = SlotStats(slot="")
    _read_stats(walk, out)


def _read_tail(walk: _Walk, out: OutFile) -> None:
    activations = ACTIVATIONS.search(walk.data, walk.pos)
    if activations is not None:
        out.activations = int(activations.group(1))
        walk.pos = activations.end() + 1
    for marker in walk.markers:
        if marker[0] < walk.pos or not marker[2].startswith(b"Glidein ending "):
            continue
        coded = CODE_AFTER.search(marker[2])
        if coded:
            out.glidein_end = _epoch(marker[2])
            out.glidein_code, out.glidein_duration = int(coded.group(1)), int(coded.group(2))
            break


def _read_context(data: bytes, out: OutFile, limit: int, since: int) -> None:
    """Header (first lines), glidein_config dump (last value wins), XML result.

    ``since``: no ``===`` before it, so first-marker searches start there.
    """
    started = START_LINE.search(data, 0, 4096)
    out.started = int(started.group(1)) if started else None
    head = data[: min(limit, 8192)]
    for key in HEADER_KEYS:
        at = head.find(b"\n" + key + b" ")
        value = HEADER_VALUE.match(head, at + len(key) + 1) if at >= 0 else None
        if value:
            out.header[key.decode()] = value.group(1).decode("utf-8", "replace")
    read_config(data, out.config, limit)
    for marker in _first_all(data, b"Last script ended", since):
        coded = CODE_AFTER.search(marker)
        if coded:
            out.last_script_end = _epoch(marker)
            out.last_script_code = int(coded.group(1))
    xml_at = data.find(b"=== XML description of glidein activity ===", since)
    if xml_at >= 0:
        xml_end = data.find(b"=== End XML description of glidein activity ===", xml_at)
        end = xml_end if xml_end >= 0 else len(data)
        # at most one byte past xmlresult's bound: a longer result is refused there, and never copied whole
        out.xml = data[xml_at + 43 : min(end, xml_at + 43 + MAX_XML_BYTES + 1)]


def _first_all(data: bytes, prefix: bytes, since: int = 0) -> List[bytes]:
    at = data.find(b"=== " + prefix, since)
    if at < 0:
        return []
    found = MARKER.match(data, at)
    return [found.group(1)] if found else []


def read_config(data: bytes, config: Dict[str, str], limit: Optional[int] = None) -> None:
    """Add the known glidein_config keys found in a dump before ``limit`` (the last value wins).

    ``dict(findall)`` keeps the last line of each key, so only those are decoded.
    """
    end = len(data) if limit is None else limit
    for key, value in dict(CONFIG_LINE.findall(data, 0, end)).items():
        config[key.decode()] = value.decode("utf-8", "replace").strip()


def _validated(data: bytes) -> Tuple[_Walk, Optional[Tuple[int, int, bytes]], Optional[int]]:
    """The walk positioned after the validation marker (GlideinWMS's first search)."""
    at = data.find(b"=== Last script starting ")
    walk = _Walk(data, max(at, 0))
    for marker in walk.markers:
        if marker[2].startswith(b"Last script starting "):
            secs = VALIDATING.search(marker[2])
            if secs is not None:
                walk.pos = marker[1] + 1
                return walk, marker, int(secs.group(1))
    return (_Walk(data) if at > 0 else walk), None, None


def parse_out(data: bytes) -> OutFile:
    """Parse the bytes of a ``.out``; never raises on odd content."""
    out = OutFile(size=len(data))
    if len(data) < 10:
        return out
    walk, validated, out.validation_duration = _validated(data)
    if validated is not None:
        out.last_script_start = _epoch(validated[2])
    _read_condor(walk, out)
    _read_tail(walk, out)
    _read_context(data, out, validated[0] if validated else len(data), walk.searches_from())
    return out
