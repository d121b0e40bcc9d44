"""What the glidein and each job use, sampled by the sidecar (docs/resources.md).

A thread of the sidecar's own (never the traced shell) samples, every
``GWTRACE_RESOURCE_INTERVAL`` seconds (default 30, ``0`` = off):

* the glidein: the process tree under the glidein's top process
  (``GWTRACE_GLIDEIN_PID``, else ``GLIDEIN_STARTUP_PID`` from ``glidein_config``;
  none named: no glidein subject), and the node's load average;
* each running job: the job wrapper registers it in ``resources/<trace>-<span>``
  in the state directory (its pid, the job's id, owner, requests, and an interval
  of its own, ``GWTRACE_JOB_RESOURCE_INTERVAL``); the tree under that pid, and the
  job's cgroup when HTCondor gave it one of its own (v2 or v1), read from
  ``/proc/<pid>/cgroup``.

Samples (``export.metrics.ResourceSample``) wait in a bounded buffer
(``GWTRACE_RESOURCE_MAX_POINTS`` data points, oldest dropped and counted) and go,
after each round, to the OTLP endpoint's ``/v1/metrics``, or into the embedded
store (``TraceStore.put_metrics``, where the store has it), or wait for the stop,
which ships them home as ``kind=metrics`` blocks (``sidecar/ship.py``).

Pids are reused: a subject is its pid *and* its start tick (``/proc/PID/stat``);
a registration whose process started after the file was written names another
process and is dropped.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections import deque
from typing import Any, Callable, Deque, Dict, List, Mapping, Optional, Tuple

from gwtrace.export.metrics import ResourceSample, Subject, to_metrics_data, to_request
from gwtrace.sidecar import procfs
from gwtrace.sidecar.channels import RESOURCES_DIR, make_resources_dir

log = logging.getLogger("gwtrace.sidecar.resources")

DEFAULT_INTERVAL_S = 30.0
MIN_INTERVAL_S = 1.0
MAX_INTERVAL_S = 3600.0
DEFAULT_MAX_POINTS = 50_000
#: Data points in one request (a collector's default limit is a few MB: ~100 bytes a point).
POINTS_PER_REQUEST = 5_000
#: Ended jobs remembered for the samples of theirs still in the buffer.
MAX_ENDED = 10_000
#: New job registrations are looked for at least this often.
DISCOVER_S = 5.0
MAX_BACKOFF_S = 300.0
_REG_NAME = re.compile(r"\A([0-9a-f]{32})-([0-9a-f]{16})\Z")
_JOB_ID = re.compile(r"\A[0-9]{1,12}\.[0-9]{1,9}\Z")
_OWNER = re.compile(r"\A[A-Za-z0-9._@+-]{1,64}\Z")

#: Counters this module adds to ``gwtrace sidecar status``.
RESOURCE_COUNTERS = ("resource_samples", "resource_points_exported", "resource_points_dropped",
                     "resource_points_shipped", "resource_export_failures")


def interval_from_env(name: str = "GWTRACE_RESOURCE_INTERVAL", default: float = DEFAULT_INTERVAL_S) -> float:
    """Seconds between samples: 0 is off; a bad value is warned about and the default kept."""
    raw = (os.environ.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        log.warning("ignoring %s=%r: not a number of seconds", name, raw)
        return default
    if value <= 0:
        return 0.0
    return min(max(value, MIN_INTERVAL_S), MAX_INTERVAL_S)


def max_points_from_env() -> int:
    raw = (os.environ.get("GWTRACE_RESOURCE_MAX_POINTS") or "").strip()
    try:
        return max(100, int(raw)) if raw else DEFAULT_MAX_POINTS
    except ValueError:
        log.warning("ignoring GWTRACE_RESOURCE_MAX_POINTS=%r: not a whole number", raw)
        return DEFAULT_MAX_POINTS


def glidein_pid(glidein_config: Optional[str]) -> Optional[int]:
    """The glidein's top process: ``GWTRACE_GLIDEIN_PID``, else glidein_config's ``GLIDEIN_STARTUP_PID``."""
    raw = (os.environ.get("GWTRACE_GLIDEIN_PID") or "").strip()
    if not raw and glidein_config:
        try:
            with open(glidein_config, encoding="utf-8", errors="replace") as f:
                for line in f:
                    key, _, value = line.rstrip("\n").partition(" ")
                    if key == "GLIDEIN_STARTUP_PID":
                        raw = value.strip()
        except OSError:
            pass
    return int(raw) if raw.isdigit() and int(raw) > 1 else None


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
                 proc: str = "/proc", cgroup_root: str = "/sys/fs/cgroup", pss: bool = True) -> None:
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
        """Pick up registrations made since the last look; forget the ones removed."""
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
            return ResourceSample(t.key, t_ns, "proc", *([None] * 9), load) if t.load else None
        root = stats.get(t.pid)
        if root is None or root.start != t.start:
            if t.path:                 # the job's wrapper is gone (or its pid reused): the job is over
                self._end(t.key)
            else:
                t.pid = None
            return ResourceSample(t.key, t_ns, "proc", *([None] * 9), load) if t.load else None
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
                              load if t.load else None)

    def subjects_for_export(self) -> Dict[str, Subject]:
        out = dict(self.ended)
        out.update({k: t.subject for k, t in self.subjects.items()})
        return out


class Buffer:
    """Samples waiting to be delivered, at most ``max_points`` data points: the oldest go first."""

    def __init__(self, max_points: int) -> None:
        self.max_points = max_points
        self.samples: Deque[ResourceSample] = deque()
        self.points = 0
        self.dropped = 0

    def add(self, samples: List[ResourceSample]) -> None:
        for s in samples:
            self.samples.append(s)
            self.points += s.points
        while self.points > self.max_points and self.samples:
            old = self.samples.popleft()
            self.points -= old.points
            self.dropped += old.points

    def take(self, max_points: int) -> List[ResourceSample]:
        """The oldest samples, up to ``max_points`` points (at least one sample); left in the buffer."""
        out, n = [], 0
        for s in self.samples:
            if out and n + s.points > max_points:
                break
            out.append(s)
            n += s.points
        return out

    def remove(self, count: int) -> None:
        for _ in range(count):
            self.points -= self.samples.popleft().points


class ResourceMonitor:
    """The sampling thread: rounds on schedule, delivery after each round, the leftovers at stop.

    ``send(request_or_data)`` is the destination: it gets ``MetricsData`` and says whether it was
    delivered (``export.metrics.MetricsOutcome``); None means hold everything for the stop (ship-home).
    """

    def __init__(self, sampler: Sampler, buffer: Buffer, base: Callable[[], Mapping[str, Any]],
                 send: Optional[Callable[[Any], Any]] = None, destination: str = "held for ship-home") -> None:
        self.sampler = sampler
        self.buffer = buffer
        self.base = base
        self.send = send
        self.destination = destination
        self.counters: Dict[str, int] = dict.fromkeys(RESOURCE_COUNTERS, 0)
        self.last_error = ""
        self._failing = False
        self._retry_at = 0.0
        self._backoff = 1.0
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._discovered = 0.0

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="gwtrace-resources", daemon=True)
        self._thread.start()

    def round(self, now: Optional[float] = None, force: bool = False) -> int:
        """Discover jobs (at most every DISCOVER_S), sample what is due, deliver; the samples taken."""
        now = time.monotonic() if now is None else now
        if force or now - self._discovered >= min(DISCOVER_S, self.sampler.interval):
            self._discovered = now
            self.sampler.discover()
        samples = self.sampler.sample(now, force)
        if samples:
            self.counters["resource_samples"] += len(samples)
            self.buffer.add(samples)
            self.counters["resource_points_dropped"] = self.buffer.dropped
        if self.send is not None and self.buffer.samples and now >= self._retry_at:
            self.flush(now)
        return len(samples)

    def flush(self, now: Optional[float] = None, deadline: Optional[float] = None) -> None:
        """Deliver the buffer, a request at a time, until it is empty or one fails."""
        assert self.send is not None
        now = time.monotonic() if now is None else now
        while self.buffer.samples and (deadline is None or time.monotonic() < deadline):
            batch = self.buffer.take(POINTS_PER_REQUEST)
            data = to_metrics_data(batch, self.sampler.subjects_for_export(), self.base())
            try:
                outcome = self.send(data)
            except Exception as exc:  # noqa: BLE001 - never fatal
                outcome = None
                message = f"{type(exc).__name__}: {exc}"
            else:
                message = outcome.message
            points = sum(s.points for s in batch)
            if outcome is not None and outcome.delivered:
                self.buffer.remove(len(batch))
                self.counters["resource_points_exported"] += points
                if self._failing:
                    log.info("resource metrics delivered again to %s", self.destination)
                self._failing, self._backoff = False, 1.0
                continue
            self.counters["resource_export_failures"] += 1
            self.last_error = message
            if outcome is not None and not outcome.retryable:
                self.buffer.remove(len(batch))      # the endpoint will never take these: counted, not retried
                self.buffer.dropped += points
                self.counters["resource_points_dropped"] = self.buffer.dropped
            if not self._failing:
                log.warning("resource metrics not delivered to %s: %s", self.destination, message)
            self._failing = True
            self._retry_at = now + self._backoff
            self._backoff = min(MAX_BACKOFF_S, self._backoff * 2)
            return

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.round()
                wait = min(self.sampler.next_due(), self._discovered + DISCOVER_S) - time.monotonic()
            except Exception as exc:  # noqa: BLE001 - the sampler must never take the sidecar down
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.warning("resource sampling failed: %s", self.last_error)
                wait = self.sampler.interval
            self._stop.wait(max(0.05, wait))

    def close(self, timeout: float) -> None:
        """Stop the thread; one last round (every subject) and one last delivery within ``timeout``."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout + 1)
        deadline = time.monotonic() + max(0.0, timeout)
        try:
            samples = self.sampler.sample(force=True)
            self.counters["resource_samples"] += len(samples)
            self.buffer.add(samples)
            self.counters["resource_points_dropped"] = self.buffer.dropped
            if self.send is not None and not self._failing:     # a failing endpoint: they ride home instead
                self._retry_at = 0.0
                self.flush(deadline=deadline)
        except Exception as exc:  # noqa: BLE001
            self.last_error = f"{type(exc).__name__}: {exc}"

    def leftover_requests(self) -> List[Tuple[Any, int]]:
        """What is still undelivered, as (ExportMetricsServiceRequest, points) of at most
        POINTS_PER_REQUEST points each; the buffer is emptied."""
        out = []
        subjects, base = self.sampler.subjects_for_export(), self.base()
        while self.buffer.samples:
            batch = self.buffer.take(POINTS_PER_REQUEST)
            out.append((to_request(to_metrics_data(batch, subjects, base)), sum(s.points for s in batch)))
            self.buffer.remove(len(batch))
        return out

    def status(self) -> Dict[str, int]:
        counters = dict(self.counters)
        counters["resource_points_pending"] = self.buffer.points
        counters["resource_jobs_sampled"] = sum(1 for k in self.sampler.subjects if k.startswith("job:"))
        return counters


def make_resource_monitor(directory: str, glidein_config: Optional[str], delivery: Any,
                          base: Callable[[], Mapping[str, Any]]) -> Optional[ResourceMonitor]:
    """The sidecar's sampler from the environment, or None when ``GWTRACE_RESOURCE_INTERVAL=0``."""
    from gwtrace.sidecar.destination import make_metrics_send

    interval = interval_from_env()
    make_resources_dir(directory)      # job wrappers register there even with sampling off: harmless
    if not interval:
        return None
    send, where = make_metrics_send(delivery)
    sampler = Sampler(directory, interval, glidein_pid(glidein_config))
    return ResourceMonitor(sampler, Buffer(max_points_from_env()), base, send, where)
