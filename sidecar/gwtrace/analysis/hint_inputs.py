"""What the hint rules read, gathered in one pass over the glidein summaries.

Apart from the rules (``hints.py``) because it is the part that runs once per
glidein: for a pool's 100 000 glideins it is where the hints' time goes, and
it is what ``fold.py`` runs in parallel over the parts of a period and merges.
Each glidein becomes an index into ``GlideinRefs`` (its name and size), so the
evidence can name the glideins behind a hint without keeping their summaries.
"""

from __future__ import annotations

from array import array
from collections import Counter, defaultdict
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from gwtrace.factory.to_trace import glidein_trace_id
from .summary import (CANON, CONDOR, ENDED, ENTRY, FAILED_SCRIPT, JOBS, REF, SCRIPTS, SITE, STARTED, STATUS, UNITS,
                      WAITS, Accumulator, Summary)

Record = Dict[str, Any]
EXAMPLES = 10  # glideins named in each hint's evidence (the count says how many there are)


def glidein_ref(rec: Record) -> Dict[str, Any]:
    """How a hint names a glidein: its id and its trace (the same id live and backfilled traces carry)."""
    return {"glidein": f"{rec.get('cluster')}.{rec.get('proc')}@{rec.get('schedd') or '?'}",
            "trace_id": glidein_trace_id(rec.get("factory"), rec.get("schedd"), rec.get("cluster"), rec.get("proc"),
                                         rec.get("glidein_uuid")),
            "site": rec.get("site"), "entry": rec.get("entry")}


class GlideinRefs:
    """The glideins behind the evidence: an index per glidein, its name and size kept, nothing else."""

    def __init__(self) -> None:
        self.refs: List[Tuple[Any, ...]] = []
        self.units = array("d")

    def add(self, s: Summary) -> int:
        cluster, proc, schedd, factory, uuid = s[REF]
        self.refs.append((cluster, proc, schedd, factory, uuid, s[SITE], s[ENTRY]))
        self.units.append(s[UNITS])
        return len(self.refs) - 1

    def merge(self, later: "GlideinRefs") -> int:
        """Append ``later``'s glideins; return how far their indexes move (what to add to each)."""
        shift = len(self.refs)
        self.refs.extend(later.refs)
        self.units.extend(later.units)
        return shift

    def name(self, index: int) -> Dict[str, Any]:
        cluster, proc, schedd, factory, uuid, site, entry = self.refs[index]
        return glidein_ref({"cluster": cluster, "proc": proc, "schedd": schedd, "factory": factory,
                            "glidein_uuid": uuid, "site": site, "entry": entry})

    def examples(self, indexes: Iterable[int], order: Optional[Sequence[float]] = None) -> List[Dict[str, Any]]:
        """The first ``EXAMPLES`` glideins, or the largest by ``order`` (one value per index; ties: first first)."""
        chosen = list(indexes)
        if order is not None:
            keyed = sorted(zip(order, range(len(chosen))), key=lambda pair: pair[0], reverse=True)
            chosen = [chosen[at] for _, at in keyed]
        return [self.name(i) for i in chosen[:EXAMPLES]]


class GlideinValues:
    """(value, glidein index) pairs in arrival order, as two arrays."""

    __slots__ = ("values", "index")

    def __init__(self) -> None:
        self.values = array("d")
        self.index = array("l")

    def add(self, value: float, index: int) -> None:
        self.values.append(value)
        self.index.append(index)

    def __len__(self) -> int:
        return len(self.values)

    def merge(self, later: "GlideinValues", shift: int) -> None:
        """Append ``later``'s pairs, its glidein indexes moved by ``shift``."""
        self.values.extend(later.values)
        self.index.extend(shifted(later.index, shift))


def shifted(indexes: array, shift: int) -> array:
    """Glidein indexes moved by ``shift`` (a merged part's glideins come after the ones already held)."""
    return array("l", [i + shift for i in indexes]) if shift else indexes


MIN_PERIOD = 3600.0   # a group's period is at least an hour: a few minutes' sample is not scaled up to a day


class Period:
    """The first start and last end of a group's glideins: the period its costs per day are over.

    Each group has its own, so a glidein elsewhere (another site, an unrelated two-second trace)
    cannot stretch the days a hint's cost is divided by.
    """

    __slots__ = ("first", "last")

    def __init__(self) -> None:
        self.first: Optional[float] = None
        self.last: Optional[float] = None

    def add(self, start: Optional[float], end: Optional[float]) -> None:
        if start is not None:
            self.first = start if self.first is None or start < self.first else self.first
        if end is not None:
            self.last = end if self.last is None or end > self.last else self.last

    def merge(self, later: "Period") -> None:
        self.add(later.first, later.last)

    def days(self) -> float:
        """Days from the first start to the last end, at least one hour (a tiny sample is not inflated)."""
        if self.first is None or self.last is None:
            return MIN_PERIOD / 86400.0
        return max(self.last - self.first, MIN_PERIOD) / 86400.0


class _Site:
    __slots__ = ("glideins", "failed", "lost", "ran", "period")

    def __init__(self) -> None:
        self.glideins = 0
        self.failed: Dict[str, array] = {}   # failed_script -> glidein indexes
        self.lost: Dict[str, float] = defaultdict(float)   # failed_script -> validation_fail seconds
        self.ran: Counter = Counter()   # script -> glideins that ran it (the failure rate's base)
        self.period = Period()

    def merge(self, later: "_Site", shift: int) -> None:
        self.glideins += later.glideins
        for script, bad in later.failed.items():
            self.failed.setdefault(script, array("l")).extend(shifted(bad, shift))
            self.lost[script] += later.lost[script]
        for script, count in later.ran.items():
            self.ran[script] += count
        self.period.merge(later.period)


class _Entry:
    __slots__ = ("glideins", "waits", "jobs", "killed", "hit", "lost", "walls", "lives", "running", "empty",
                 "empty_lost", "period")

    def __init__(self) -> None:
        self.glideins = 0
        self.waits = (GlideinValues(), GlideinValues(), GlideinValues())   # first job, idle tail, CE
        self.jobs = self.killed = self.running = 0
        self.hit = array("l")          # glideins whose end killed a job
        self.lost = 0.0                # their preemption badput (s)
        self.walls = array("d")
        self.lives = array("d")
        self.empty = array("l")        # glideins that started HTCondor and never got a job
        self.empty_lost = 0.0
        self.period = Period()

    def merge(self, later: "_Entry", shift: int) -> None:
        self.glideins += later.glideins
        for mine, theirs in zip(self.waits, later.waits):
            mine.merge(theirs, shift)
        self.jobs += later.jobs
        self.killed += later.killed
        self.running += later.running
        self.hit.extend(shifted(later.hit, shift))
        self.lost += later.lost
        self.walls.extend(later.walls)
        self.lives.extend(later.lives)
        self.empty.extend(shifted(later.empty, shift))
        self.empty_lost += later.empty_lost
        self.period.merge(later.period)


class HintInputs(Accumulator):
    """What the rules read, gathered in one pass over the glidein summaries (``add``)."""

    def __init__(self) -> None:
        self.refs = GlideinRefs()
        self.sites: Dict[str, _Site] = {}
        self.entries: Dict[str, _Entry] = {}
        self.runs: Dict[str, Dict[str, GlideinValues]] = {}   # script -> site -> (seconds, glidein)
        self.ce_everyone = array("d")
        self.first_start: Optional[float] = None
        self.last_end: Optional[float] = None

    def add(self, s: Summary) -> None:
        if s[CANON] is None:
            return
        index = self.refs.add(s)
        if s[STARTED] is not None:
            self.first_start = s[STARTED] if self.first_start is None else min(self.first_start, s[STARTED])
        if s[ENDED] is not None:
            self.last_end = s[ENDED] if self.last_end is None else max(self.last_end, s[ENDED])
        if s[WAITS][2] is not None:
            self.ce_everyone.append(s[WAITS][2])
        if s[SITE]:
            self._add_site(s, index)
        if s[ENTRY]:
            self._add_entry(s, index)

    def _add_site(self, s: Summary, index: int) -> None:
        site = self.sites.get(s[SITE])
        if site is None:
            site = self.sites[s[SITE]] = _Site()
        site.glideins += 1
        site.period.add(s[STARTED], s[ENDED])
        ran = {script[0] for script in s[SCRIPTS]}   # each script once per glidein: the rates' base
        if s[STATUS] == "ERROR" and s[FAILED_SCRIPT]:
            site.failed.setdefault(s[FAILED_SCRIPT], array("l")).append(index)
            site.lost[s[FAILED_SCRIPT]] += s[CANON][0]
            ran.add(s[FAILED_SCRIPT])
        site.ran.update(ran)
        runs = self.runs
        site_name = s[SITE]
        for script, seconds, _, _ in s[SCRIPTS]:
            if seconds is not None:
                by_site = runs.get(script)
                if by_site is None:
                    by_site = runs[script] = {}
                cell = by_site.get(site_name)
                if cell is None:
                    cell = by_site[site_name] = GlideinValues()
                cell.values.append(seconds)
                cell.index.append(index)

    def _add_entry(self, s: Summary, index: int) -> None:
        entry = self.entries.get(s[ENTRY])
        if entry is None:
            entry = self.entries[s[ENTRY]] = _Entry()
        entry.glideins += 1
        entry.period.add(s[STARTED], s[ENDED])
        first_job, tail, ce = s[WAITS]
        if first_job is not None:
            entry.waits[0].add(first_job, index)
        if tail is not None:
            entry.waits[1].add(tail, index)
        if ce is not None:
            entry.waits[2].add(ce, index)
        jobs, killed, walls = s[JOBS]
        entry.jobs += jobs
        entry.killed += killed
        if killed:
            entry.hit.append(index)
            entry.lost += s[CANON][1]
        entry.walls.extend(walls)
        started, life = s[CONDOR]
        if life is not None:
            entry.lives.append(life)
        if started:
            entry.running += 1
            if not jobs:
                entry.empty.append(index)
                entry.empty_lost += s[CANON][2]

    def merge(self, later: "HintInputs") -> None:
        shift = self.refs.merge(later.refs)
        self.first_start = _either(min, self.first_start, later.first_start)
        self.last_end = _either(max, self.last_end, later.last_end)
        self.ce_everyone.extend(later.ce_everyone)
        for groups, theirs, make in ((self.sites, later.sites, _Site), (self.entries, later.entries, _Entry)):
            for name, cell in theirs.items():
                groups.setdefault(name, make()).merge(cell, shift)   # type: ignore[operator]
        for script, by_site in later.runs.items():
            mine = self.runs.setdefault(script, {})
            for site, cell in by_site.items():
                mine.setdefault(site, GlideinValues()).merge(cell, shift)

    def days(self) -> float:
        """Length of the whole analysed period (at least one hour); each hint uses its own group's (``Period``)."""
        period = Period()
        period.add(self.first_start, self.last_end)
        return period.days() if self.first_start is not None and self.last_end is not None else 1.0


def _either(pick: Any, a: Optional[float], b: Optional[float]) -> Optional[float]:
    """``pick(a, b)`` of the values that are known (None when neither is)."""
    return b if a is None else a if b is None else pick(a, b)
