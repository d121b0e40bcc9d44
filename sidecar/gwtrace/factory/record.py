"""The glidein record: one per pilot, the contract every analysis reads.

``GlideinRecord.to_dict()`` gives the JSON form whose field names are fixed
(docs/accounting.md).  ``build_record`` assembles it from the parsed files;
it never raises on bad input: what could not be read makes the record
``incomplete`` with the reasons.
"""

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from . import canonical as units
from .condorg_log import CondorGJob
from .errfile import ErrFile
from .gwms_stats import completed_stats, extract_log_data
from .jobs import classify_jobs, jobs_from_files
from .outfile import OutFile
from .startd_history import JobRecord
from .xmlresult import ScriptResult, XmlResult, parse_xml_result

#: why a record lacks the run (``_completeness``): the files did not show the glidein running
NO_OUT_FILE = "no .out file (yet)"
SHORT_OUT = ".out has only"
#: notes of a resource the files did not give (an assumed value a live trace may know)
CPUS_ASSUMED = "GLIDEIN_CPUS unknown"
MEMORY_ASSUMED = "GLIDEIN_MaxMemMBs unknown"


@dataclass
class GlideinRecord:
    """One glidein (pilot); times are epoch seconds, resources as provisioned."""

    cluster: Optional[int] = None
    proc: Optional[int] = None
    schedd: Optional[str] = None
    factory: Optional[str] = None
    site: Optional[str] = None
    entry: Optional[str] = None
    frontend: Optional[str] = None
    glidein_uuid: Optional[str] = None
    cpus: Optional[int] = None
    memory_mb: Optional[int] = None
    gpus: int = 0
    max_walltime: Optional[int] = None  # GLIDEIN_Max_Walltime (s): its lifetime, for gwtrace job --why
    submitted: Optional[int] = None
    ce_submitted: Optional[int] = None  # Condor-G 027: handed to the CE (queued at the site)
    started: Optional[int] = None
    ended: Optional[int] = None
    condor_start: Optional[int] = None
    condor_end: Optional[int] = None
    status: str = "UNKNOWN"
    failed_script: Optional[str] = None
    incomplete: bool = False
    incomplete_reasons: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    gwms: Dict[str, Any] = field(default_factory=dict)
    canonical: Dict[str, float] = field(default_factory=dict)
    canonical_gpu: Dict[str, float] = field(default_factory=dict)
    jobs: List[JobRecord] = field(default_factory=list)
    scripts: List[ScriptResult] = field(default_factory=list)
    holds: List[Dict[str, Any]] = field(default_factory=list)
    segments: List[units.Segment] = field(default_factory=list, repr=False)

    @property
    def key(self) -> str:
        """``factory/schedd/cluster.proc[/uuid]``: what makes a glidein unique (and its trace id: the uuid
        tells apart two glideins of one Condor-G job id, e.g. after a schedd reset)."""
        base = f"{self.factory or ''}/{self.schedd or ''}/{self.cluster}.{self.proc}"
        return f"{base}/{self.glidein_uuid}" if self.glidein_uuid else base

    def mark_incomplete(self, reason: str) -> None:
        """Record why this record lacks data (several reasons can apply)."""
        self.incomplete = True
        if reason not in self.incomplete_reasons:
            self.incomplete_reasons.append(reason)

    def to_dict(self) -> Dict[str, Any]:
        """The JSON contract (``gwtrace glideins --format json``)."""
        data = {k: v for k, v in self.__dict__.items() if k not in ("jobs", "scripts", "segments")}
        data["jobs"] = [job.to_dict() for job in self.jobs]
        data["scripts"] = [
            {"id": s.id, "start": s.start, "end": s.end, "status": s.status,
             **({"detail": s.detail[:300]} if s.status == "ERROR" and s.detail else {})} for s in self.scripts
        ]
        return data

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "GlideinRecord":
        """A record from its JSON form (``to_dict``), e.g. as the store keeps it; the segments are not
        part of it (``reaccount`` cuts them again)."""
        names = set(cls.__dataclass_fields__) - {"jobs", "scripts", "segments"}
        rec = cls(**{k: v for k, v in data.items() if k in names})
        rec.jobs = [JobRecord(**{k: v for k, v in job.items() if k in JobRecord.__dataclass_fields__})
                    for job in data.get("jobs") or []]
        rec.scripts = [ScriptResult(id=s["id"], status=s.get("status"), start=s.get("start"), end=s.get("end"),
                                    detail=s.get("detail")) for s in data.get("scripts") or []]
        return rec

    @property
    def read_out(self) -> bool:
        """Whether the factory's ``.out`` of this glidein was read (else it is known by its Condor-G job,
        or by its trace, only)."""
        return not any(r == NO_OUT_FILE or r.startswith(SHORT_OUT) for r in self.incomplete_reasons)


def _num(value: Optional[str]) -> Optional[int]:
    try:
        return int(float(value)) if value not in (None, "") else None
    except ValueError:
        return None


def _resources(rec: GlideinRecord, config: Dict[str, str], err: Optional[ErrFile]) -> None:
    rec.cpus = _num(config.get("GLIDEIN_CPUS")) or _num(config.get("GLIDEIN_ESTIMATED_CPUS"))
    if rec.cpus is None:
        rec.cpus = 1
        rec.notes.append(f"{CPUS_ASSUMED} or not a number: 1 core assumed (GlideinWMS's default)")
    rec.memory_mb = _num(config.get("GLIDEIN_MaxMemMBs"))
    if rec.memory_mb is None:
        rec.memory_mb = int(rec.cpus * units.UNIT_MB)
        rec.notes.append(f"{MEMORY_ASSUMED}: 2 GB per core assumed")
    gpus = _num(config.get("GLIDEIN_GPUS"))
    if gpus is None and err is not None:
        gpus = err.gpus
    rec.gpus = gpus or 0
    rec.max_walltime = _num(config.get("GLIDEIN_Max_Walltime"))


def _identity(rec: GlideinRecord, out: Optional[OutFile], config: Dict[str, str], env: Dict[str, str]) -> None:
    header = out.header if out else {}

    def pick(*values: Optional[str]) -> Optional[str]:
        return next((v for v in values if v), None)

    rec.schedd = pick(rec.schedd, header.get("condorg_schedd"), config.get("CONDORG_SCHEDD"), env.get("condorg_schedd"))
    rec.factory = pick(rec.factory, header.get("glidein_factory"), config.get("GLIDEIN_Factory"),
                       env.get("glidein_factory"))
    rec.entry = pick(header.get("glidein_entry"), config.get("GLIDEIN_Entry_Name"), env.get("glidein_entry"), rec.entry)
    rec.frontend = pick(header.get("client_name"), config.get("GLIDEIN_Client"), config.get("GLIDECLIENT_Name"),
                        env.get("client_name"), rec.frontend)
    rec.site = pick(config.get("GLIDEIN_Site"), rec.site)
    rec.glidein_uuid = pick(header.get("glidein_uuid"), config.get("GLIDEIN_UUID"))


def _result(rec: GlideinRecord, out: Optional[OutFile], err: Optional[ErrFile]) -> Optional[XmlResult]:
    """The long XML from ``.err`` if readable, else the short one from ``.out``."""
    result = None
    candidates = (("encoded XML in .err", err.long_xml() if err else None), (".out XML", out.xml if out else None))
    for label, data in candidates:
        if data is None:
            continue
        try:
            result = parse_xml_result(data)
            break
        except ValueError as problem:
            rec.mark_incomplete(f"{label}: {problem}")
    if result is not None:
        rec.status = result.glidein.status or "UNKNOWN"
        rec.failed_script = result.glidein.failed_script
        rec.scripts = result.scripts
    return result


def _completeness(rec: GlideinRecord, out: Optional[OutFile], err: Optional[ErrFile]) -> None:
    if out is None:
        rec.mark_incomplete(NO_OUT_FILE)
    elif out.size < 10:
        rec.mark_incomplete(f"{SHORT_OUT} {out.size} bytes")
    else:
        if out.condor_started and out.condor_duration is None:
            rec.mark_incomplete("hard-killed: 'Condor starting' without 'Condor ended'")
        if out.glidein_duration is None:
            rec.mark_incomplete("no 'Glidein ending' marker (killed or truncated .out)")
    if err is None:
        rec.mark_incomplete("no .err file")
    else:
        for problem in err.problems:
            rec.mark_incomplete(f".err {problem}")


def _times(rec: GlideinRecord, out: Optional[OutFile], condorg: Optional[CondorGJob]) -> None:
    if condorg is not None:
        rec.submitted = condorg.submitted
        rec.ce_submitted = condorg.grid_submitted
        rec.holds = [h.__dict__ for h in condorg.holds]
        if condorg.removed is not None and rec.status == "UNKNOWN":
            rec.status = "REMOVED"
    if out is not None:
        rec.condor_start, rec.condor_end = out.condor_start, out.condor_end
    rec.started = (out.started if out else None) or (condorg.running if condorg else None)
    rec.ended = (out.glidein_end if out else None) or (out.condor_end if out else None) \
        or (condorg.ended if condorg else None)


def build_record(cluster: Optional[int], proc: Optional[int], out: Optional[OutFile], err: Optional[ErrFile],
                 condorg: Optional[CondorGJob] = None, entry_hint: Optional[str] = None) -> GlideinRecord:
    """Assemble one record from whatever files exist for the glidein."""
    rec = GlideinRecord(cluster=cluster, proc=proc, entry=entry_hint)
    config: Dict[str, str] = dict(out.config) if out else {}
    if err is not None:
        config.update(err.config)
    result = _result(rec, out, err)
    _identity(rec, out, config, result.glidein.env if result else {})
    _resources(rec, config, err)
    _completeness(rec, out, err)
    _times(rec, out, condorg)
    running = condorg.running if condorg else None
    last = condorg.terminated if condorg else None
    rec.gwms, notes = completed_stats(extract_log_data(out), running, last)
    rec.notes.extend(notes)
    rec.jobs, job_notes = jobs_from_files(out, err)
    rec.notes.extend(job_notes)
    account(rec, out)
    return rec


def _empty_category(rec: GlideinRecord, out: Optional[OutFile]) -> str:
    """Where the time of a glidein that ran no known job goes (docs/accounting.md)."""
    if out is None or out.size < 10:
        rec.notes.append("no usable .out: the glidein's time is counted as validation fail")
        return "validation_fail"
    short = out.condor_duration is not None and out.condor_duration < 5
    if not out.condor_started or short or rec.status == "ERROR":
        return "validation_fail"
    has_counts = bool(out.stats and out.stats.counts)
    if not has_counts:
        rec.mark_incomplete("HTCondor ran but no per-job data (no stats lines, no StartdHistoryLog):"
                            " its time cannot be told apart, counted as overhead")
        return "overhead"
    return "decision_problem"


def account(rec: GlideinRecord, out: Optional[OutFile]) -> None:
    """Fill ``canonical``/``canonical_gpu`` and the segments behind them."""
    reaccount(rec, lambda: _empty_category(rec, out))


def reaccount(rec: GlideinRecord, empty: Callable[[], str]) -> None:
    """Cut the record's segments and totals again from its times, resources and jobs; ``empty()`` names
    the category of a glidein that ran no known job (asked only then)."""
    start, end = units.pilot_bounds(rec.started, rec.ended, rec.gwms.get("duration") or 0)
    intervals = classify_jobs(rec.jobs, rec.condor_end or end)
    category = "overhead" if intervals else empty()
    rec.segments = units.segments(start, end, rec.cpus or 1, rec.memory_mb or 0, rec.gpus, intervals, category)
    rec.canonical = units.totals(rec.segments, "cpu")
    rec.canonical_gpu = units.totals(rec.segments, "gpu")
