"""Who the resource sampler follows, and one round of sampling (resources.py runs it).

The glidein (the tree under its top process) and each job a job wrapper registered in
``resources/<trace>-<span>`` (the tree under the wrapper, or the job's own cgroup): what a
registration may say, how a reused pid is told apart (its start tick), and one sample of every
subject that is due, from one scan of ``/proc`` for all (docs/resources.md). No thread, no
delivery: the paths are parameters, so that tests lay out fake ``/proc`` and cgroup trees.
"""

from __future__ import annotations

import logging
import os
import re
import time
from typing import Any, Dict, List, Optional, Tuple

from gwtrace.export.metrics import ResourceSample, Subject
from gwtrace.sidecar import procfs
from gwtrace.sidecar.channels import RESOURCES_DIR
from gwtrace.wire import traceparent

log = logging.getLogger("gwtrace.sidecar.resources")

MIN_INTERVAL_S = 1.0
MAX_INTERVAL_S = 3600.0
#: Ended jobs remembered for the samples of theirs still in the buffer.
MAX_ENDED = 10_000
_REG_NAME = re.compile(r"\A([0-9a-f]{32})-([0-9a-f]{16})\Z")
_JOB_ID = re.compile(r"\A[0-9]{1,12}\.[0-9]{1,9}\Z")
_OWNER = re.compile(r"\A[A-Za-z0-9._@+-]{1,64}\Z")


def config_value(glidein_config: Optional[str], name: str) -> str:
    """The last value of ``name`` in glidein_config ("" without one; a later line overrides)."""
    raw = ""
    if glidein_config:
        try:
            with open(glidein_config, encoding="utf-8", errors="replace") as f:
                for line in f:
                    key, _, value = line.rstrip("\n").partition(" ")
                    if key == name:
                        raw = value.strip()
        except OSError:
            pass
    return raw


def glidein_pid(glidein_config: Optional[str]) -> Optional[int]:
    """The glidein's top process: ``GWTRACE_GLIDEIN_PID``, else glidein_config's ``GLIDEIN_STARTUP_PID``."""
    raw = (os.environ.get("GWTRACE_GLIDEIN_PID") or "").strip() or config_value(glidein_config, "GLIDEIN_STARTUP_PID")
    return int(raw) if raw.isdigit() and int(raw) > 1 else None


def glidein_context(glidein_config: Optional[str]) -> Optional[Tuple[str, str]]:
    """The glidein's root span (trace id, span id, hex): glidein_config's ``TRACEPARENT``, which
    gwtrace_setup.sh publishes after the sidecar has started (so it is looked for until found)."""
    parent = traceparent.parse(config_value(glidein_config, "TRACEPARENT"))
    return (parent.trace_id, parent.span_id) if parent else None


class Tracked:
    """A subject being sampled: who it is (pid, start tick), its schedule, what it reported."""

    def __init__(self, key: str, pid: Optional[int], start: Optional[int], attributes: Dict[str, Any],
                 start_ns: int, interval: float, cgroup: Optional[procfs.CgroupRef] = None,
                 load: bool = False, path: Optional[str] = None) -> None:
        self.key = key
        self.pid = pid
        self.start = start
        self.subject = Subject(attributes, start_ns)
        self.interval = interval
        self.cgroup = cgroup
        self.load = load             # the node's load average goes with it (the glidein)
        self.path = path             # its registration file (a job)
        self.due = 0.0
        self.peak = 0
        self.cpu = (0.0, 0.0)        # cumulative values never go back (a process gone out of the tree)
        self.io = (0, 0)


def parse_registration(text: str) -> Dict[str, str]:
    """``key=value`` lines of a job's registration: only the known keys, only well-formed values."""
    out: Dict[str, str] = {}
    for line in text.splitlines()[:32]:
        key, eq, value = line.partition("=")
        value = value.strip()
        if not eq:
            continue
        if key in ("pid", "request_cpus", "request_memory_mb") and value.isdigit() and len(value) < 12:
            out[key] = value
        elif key == "interval" and re.fullmatch(r"[0-9]{1,6}(\.[0-9]{1,3})?", value):
            out[key] = value
        elif key == "job_id" and _JOB_ID.match(value):
            out[key] = value
        elif key == "owner" and _OWNER.match(value):
            out[key] = value
    return out


class Sampler:
    """The subjects and one round of sampling (no thread: ResourceMonitor runs it). Paths injectable."""

    def __init__(self, directory: Optional[str], interval: float, glidein: Optional[int] = None,
                 proc: str = "/proc", cgroup_root: str = "/sys/fs/cgroup", pss: bool = True,
                 glidein_config: Optional[str] = None) -> None:
        self.glidein_config = glidein_config
        self.cpus = os.cpu_count()     # the machine's logical CPUs: what its load average is over
        self.dir = os.path.join(directory, RESOURCES_DIR) if directory else None
        self.interval = interval
        self.proc = proc
        self.cgroup_root = cgroup_root
        self.pss = pss
        self.boot = procfs.boot_time(proc) or 0.0
        self.subjects: Dict[str, Tracked] = {}
        self.ended: Dict[str, Subject] = {}     # jobs gone whose samples may still wait in the buffer
        own = procfs.read_cgroup_ref(os.getpid(), proc)
        self.glidein_cgroup = (procfs.read_cgroup_ref(glidein, proc) if glidein else None) or own
        if glidein:             # no glidein named (a sidecar of `gwtrace run`, a test): jobs only
            st = procfs.read_stat(glidein, proc)
            if st is None:
                log.warning("glidein process %d not found: sampling the load average only", glidein)
            self.subjects["glidein"] = Tracked(
                "glidein", glidein if st else None, st.start if st else None, {"gwtrace.subject": "glidein"},
                self._start_ns(st) if st else time.time_ns(), interval, load=True)

    def _start_ns(self, st: procfs.ProcStat) -> int:
        return int((self.boot + st.start / procfs.CLK_TCK) * 1e9)

    # -- jobs ----------------------------------------------------------------------------------------------

    def discover(self) -> None:
        """Pick up registrations made since the last look; forget the ones removed; the glidein's trace."""
        self._glidein_trace()
        if self.dir is None:
            return
        try:
            names = set(os.listdir(self.dir))
        except OSError:
            return
        for key in [k for k, t in self.subjects.items() if t.path and os.path.basename(t.path) not in names]:
            self._end(key)
        for name in names:
            key = f"job:{name}"
            if key in self.subjects or not _REG_NAME.match(name):
                continue
            self._register(name, os.path.join(self.dir, name))

    def _glidein_trace(self) -> None:
        """The glidein's ``gwtrace.trace_id``/``gwtrace.span_id`` (its root span: the hints and the trace
        page link to it), once glidein_config has them."""
        glidein = self.subjects.get("glidein")
        if glidein is None or self.glidein_config is None or "gwtrace.trace_id" in glidein.subject.attributes:
            return
        context = glidein_context(self.glidein_config)
        if context is not None:
            attrs = dict(glidein.subject.attributes, **{"gwtrace.trace_id": context[0], "gwtrace.span_id": context[1]})
            glidein.subject = Subject(attrs, glidein.subject.start_ns)

    def _register(self, name: str, path: str) -> None:
        m = _REG_NAME.match(name)
        assert m is not None
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            try:
                st_file = os.fstat(fd)
                text = os.read(fd, 4096).decode("ascii", "replace")
            finally:
                os.close(fd)
        except OSError:
            return
        reg = parse_registration(text)
        if "pid" not in reg:            # being written (one write, but maybe not yet), or junk once old
            if time.time() - st_file.st_mtime > 10:
                self._forget(path)
            return
        pid = int(reg["pid"])
        st = procfs.read_stat(pid, self.proc) if pid > 1 else None
        if st is None or self.boot + st.start / procfs.CLK_TCK > st_file.st_mtime + 2:
            self._forget(path)        # gone, or its pid now names a later process
            return
        attrs: Dict[str, Any] = {"gwtrace.subject": "job", "gwtrace.trace_id": m.group(1),
                                 "gwtrace.span_id": m.group(2)}
        if "job_id" in reg:
            attrs["condor.job.id"] = reg["job_id"]
        if "owner" in reg:
            attrs["condor.job.owner"] = reg["owner"]
        if "request_cpus" in reg:
            attrs["job.request_cpus"] = int(reg["request_cpus"])
        if "request_memory_mb" in reg:
            attrs["job.request_memory_mb"] = int(reg["request_memory_mb"])
        interval = self.interval
        if "interval" in reg and float(reg["interval"]) > 0:
            interval = min(max(float(reg["interval"]), MIN_INTERVAL_S), MAX_INTERVAL_S)
        ref = procfs.read_cgroup_ref(pid, self.proc)
        own = ref if ref is not None and (self.glidein_cgroup is None or not ref.same_as(self.glidein_cgroup)) \
            else None
        self.subjects[f"job:{name}"] = Tracked(f"job:{name}", pid, st.start, attrs, self._start_ns(st),
                                               interval, cgroup=own, path=path)

    def _forget(self, path: str) -> None:
        try:
            os.unlink(path)
        except OSError:
            pass

    def _end(self, key: str) -> None:
        t = self.subjects.pop(key)
        self.ended[key] = t.subject
        while len(self.ended) > MAX_ENDED:      # a long glidein runs many jobs: their samples left long ago
            del self.ended[next(iter(self.ended))]
        if t.path:
            self._forget(t.path)

    # -- sampling ------------------------------------------------------------------------------------------

    def next_due(self) -> float:
        return min((t.due for t in self.subjects.values()), default=time.monotonic() + self.interval)

    def sample(self, now: Optional[float] = None, force: bool = False) -> List[ResourceSample]:
        """Sample every subject due at ``now`` (monotonic; all with ``force``): one scan of /proc for all."""
        now = time.monotonic() if now is None else now
        due = [t for t in self.subjects.values() if force or t.due <= now]
        if not due:
            return []
        stats = procfs.scan(self.proc) if any(t.pid for t in due) else {}
        t_ns = time.time_ns()
        load = procfs.load_average(self.proc)
        out = []
        for t in due:
            t.due = now + t.interval
            sample = self._sample_one(t, stats, t_ns, load)
            if sample is not None:
                out.append(sample)
        return out

    def _sample_one(self, t: Tracked, stats: Dict[int, procfs.ProcStat], t_ns: int,
                    load: Optional[float]) -> Optional[ResourceSample]:
        if t.pid is None:
            return ResourceSample(t.key, t_ns, "proc", *([None] * 9), load, self.cpus) if t.load else None
        root = stats.get(t.pid)
        if root is None or root.start != t.start:
            if t.path:                 # the job's wrapper is gone (or its pid reused): the job is over
                self._end(t.key)
            else:
                t.pid = None
            return ResourceSample(t.key, t_ns, "proc", *([None] * 9), load, self.cpus) if t.load else None
        usage = procfs.tree_usage(procfs.tree(t.pid, stats), stats, self.proc, self.pss)
        cg = procfs.read_cgroup(t.cgroup, self.cgroup_root) if t.cgroup is not None else None
        source, user, system, rss, threads, procs = \
            "proc", usage.cpu_user_s, usage.cpu_system_s, usage.rss, usage.threads, usage.procs
        peak: Optional[int] = None
        if cg is not None:
            source = cg.version
            if cg.cpu_user_s is not None and cg.cpu_system_s is not None:
                user, system = cg.cpu_user_s, cg.cpu_system_s
            rss = cg.memory if cg.memory is not None else rss
            peak = cg.memory_peak
            threads = cg.tasks if cg.tasks is not None else threads
            procs = cg.procs if cg.procs else procs
        t.peak = max(t.peak, rss)
        t.cpu = (max(t.cpu[0], user), max(t.cpu[1], system))
        io_read = io_write = None
        if usage.io_read is not None and usage.io_write is not None:
            t.io = (max(t.io[0], usage.io_read), max(t.io[1], usage.io_write))
            io_read, io_write = t.io
        return ResourceSample(t.key, t_ns, source, t.cpu[0], t.cpu[1], rss, usage.pss,
                              peak if peak is not None else t.peak, io_read, io_write, threads, procs,
                              load if t.load else None, self.cpus if t.load else None)

    def subjects_for_export(self) -> Dict[str, Subject]:
        out = dict(self.ended)
        out.update({k: t.subject for k, t in self.subjects.items()})
        return out
