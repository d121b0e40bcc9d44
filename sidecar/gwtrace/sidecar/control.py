"""``gwtrace sidecar start|stop|status|run``: the sidecar's life cycle.

``start`` works like ssh-agent: it prepares a private state directory,
daemonizes a sidecar on it, waits until the sidecar is ready and prints
``export GWTRACE_...=...;`` lines for ``eval``. Started on a directory left by
a dead sidecar, the new one takes its state over (same event log, so the
scripts still running keep writing to the right place).
"""

from __future__ import annotations

import gc
import logging
import os
import shlex
import signal
import sys
import tempfile
import time
from typing import Dict, List, Mapping, Optional, TextIO

from gwtrace.sidecar.statedir import LOG_NAME, Spool, SpoolError
from gwtrace.sidecar.channels import JOBS_DIR, make_jobs_dir, make_resources_dir
from gwtrace.sidecar.failure import make_stderr_dir
from gwtrace.sidecar.ask import JobAsker, run_with_job_asker, start_job_asker
from gwtrace.sidecar.decide import tell_glidein_decision
from gwtrace.sidecar.eventlog import EVENT_LOG_NAME, create_event_log
from gwtrace.sidecar.status import STATUS_COUNTERS, format_counters
from gwtrace.export.otlpenv import otlp_env
from gwtrace.home import gwtrace_home, private_dir
from gwtrace.wire.redact import strip_userinfo_in_logs

log = logging.getLogger("gwtrace.sidecar.control")

READY_TIMEOUT_S = 30.0


class ControlError(RuntimeError):
    """A user-facing failure: printed as one line, exit status 1."""


def boot_time_us() -> int:
    """Wall-clock time of boot in microseconds (for bash < 5 timestamps).

    bash 4 reads /proc/uptime (CLOCK_BOOTTIME); adding this offset, computed
    here from the precise clocks, turns it into epoch time.
    """
    return (time.time_ns() - time.clock_gettime_ns(time.CLOCK_BOOTTIME)) // 1000


def environment_lines(directory: str, pid: int) -> List[str]:
    values = {
        "GWTRACE_DIR": directory,
        "GWTRACE_SOCKET": "file://" + os.path.join(directory, EVENT_LOG_NAME),
        "GWTRACE_SIDECAR_PID": str(pid),
        "GWTRACE_BOOT_US": str(boot_time_us()),
    }
    return [f"export {k}={shlex.quote(v)};" for k, v in values.items()]


def choose_directory(explicit: Optional[str]) -> str:
    """--dir, else $GWTRACE_DIR (takeover), else a fresh private temp dir."""
    if explicit:
        return explicit
    env_dir = os.environ.get("GWTRACE_DIR")
    if env_dir:
        return env_dir
    made = tempfile.mkdtemp(prefix="gwtrace.", dir=os.environ.get("TMPDIR") or None)
    os.close(os.open(os.path.join(made, MADE_BY_START), os.O_WRONLY | os.O_CREAT, 0o600))
    return made


#: Marks a state directory that `sidecar start` made itself: a clean stop
#: removes it (nothing left in /tmp), one with spans still in it is kept.
MADE_BY_START = ".made-by-gwtrace-start"


def _remove_if_done(spool: Spool, out: TextIO) -> None:
    """After a stop: the directory `start` made for itself goes when every span
    was delivered or shipped; otherwise it stays, and the line says where."""
    if not os.path.exists(spool.path(MADE_BY_START)):
        return
    if spool.batch_seqs():
        print(f"gwtrace: undelivered spans kept in {spool.dir}: gwtrace ingest --spool {spool.dir}", file=out)
        return
    unread = unread_log_bytes(spool)
    if unread:
        print(f"gwtrace: {unread} byte(s) of the event log not read, kept in {spool.dir}: "
              f"gwtrace ingest --spool {spool.dir}", file=out)
        return
    import shutil

    shutil.rmtree(spool.dir, ignore_errors=True)


def unread_log_bytes(spool: Spool) -> int:
    """Bytes of the event log past the checkpoint: what no sidecar has read yet."""
    try:
        size = os.path.getsize(spool.path(EVENT_LOG_NAME))
    except OSError:
        return 0
    try:
        cp = spool.load_checkpoint()
    except SpoolError:               # no readable checkpoint: nothing is known to have been read
        return size
    unread = max(0, size - cp.offset)
    jobs = os.path.join(spool.dir, JOBS_DIR)
    for name in os.listdir(jobs) if os.path.isdir(jobs) else ():
        try:
            job_size = os.path.getsize(os.path.join(jobs, name))
        except OSError:
            continue
        saved = cp.channels.get(name, {})
        unread += max(0, job_size - int(saved.get("offset", 0) or 0))
    return unread


def start(directory: Optional[str], glidein_config: Optional[str], out: TextIO,
          ship_to: Optional[str] = None, ask: Optional[Mapping[str, str]] = None) -> int:
    """Start the daemon, print its environment; with ``ask`` (``--ask-trace-id``) the glidein's decision
    too, handed to the daemon through a pipe made before the fork (decide.tell_glidein_decision)."""
    spool = _open_spool(choose_directory(directory))
    if glidein_config:
        glidein_config = os.path.abspath(glidein_config)   # the daemon runs in /
    if spool.is_owned():
        pid = spool.owner_pid() or 0
        print(f"gwtrace: a sidecar (pid {pid}) already runs on {spool.dir}", file=sys.stderr)
        out.write("\n".join(environment_lines(spool.dir, pid)) + "\n")
        if ask is not None:
            tell_glidein_decision(glidein_config, ask, out, None)
        return 0
    read_fd, write_fd = os.pipe()
    tell_r, tell_w = os.pipe() if ask is not None else (-1, -1)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the daemon
        os.close(read_fd)
        _close(tell_w)
        _daemonize(spool.dir, glidein_config, write_fd, ship_to, tell_r if tell_r >= 0 else None)
    os.close(write_fd)
    _close(tell_r)
    os.waitpid(pid, 0)   # the intermediate child exits at once
    message = _read_ready(read_fd, READY_TIMEOUT_S)
    if not message.startswith("ready "):
        _close(tell_w)
        raise ControlError(message.strip() or f"sidecar did not start; see {spool.path(LOG_NAME)}")
    daemon_pid = int(message.split()[1])
    out.write("\n".join(environment_lines(spool.dir, daemon_pid)) + "\n")
    if ask is not None:
        tell_glidein_decision(glidein_config, ask, out, tell_w)
    return 0


def _close(fd: int) -> None:
    if fd >= 0:
        os.close(fd)


def _read_ready(fd: int, timeout: float) -> str:
    import select

    deadline = time.monotonic() + timeout
    chunks = []
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            data = os.read(fd, 4096)
            if not data:
                break
            chunks.append(data)
            if b"\n" in data:
                break
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")


def _daemonize(directory: str, glidein_config: Optional[str], ready_fd: int,
               ship_to: Optional[str], decision_fd: Optional[int] = None) -> None:  # pragma: no cover
    """Double fork, new session, stdio to the sidecar log; never returns.

    With ``--ship-to stderr`` the daemon keeps the starter's stderr (the
    glidein's .err) open, to ship undelivered spans there on SIGTERM.
    """
    code = 1
    try:
        os.setsid()
        if os.fork() > 0:
            os._exit(0)
        ship_stream = None
        if ship_to == "stderr":
            ship_stream = os.fdopen(os.dup(2), "w", buffering=1)
        os.chdir("/")
        log_fd = os.open(os.path.join(directory, LOG_NAME), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        null_fd = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null_fd, 0)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(null_fd)
        os.close(log_fd)
        sys.stdout = os.fdopen(1, "w", buffering=1)
        sys.stderr = os.fdopen(2, "w", buffering=1)
        code = run_foreground(directory, glidein_config, ready_fd=ready_fd,
                              ship_to=ship_stream if ship_to == "stderr" else ship_to, decision_fd=decision_fd)
    except BaseException as exc:  # noqa: BLE001 - report anything to the waiting parent
        try:
            os.write(ready_fd, f"gwtrace: sidecar failed to start: {exc}\n".encode())
        except OSError:
            pass
    finally:
        os._exit(code)


def run_foreground(directory: str, glidein_config: Optional[str], ready_fd: Optional[int] = None,
                   ship_to: "Optional[str | TextIO]" = None, decision_fd: Optional[int] = None) -> int:
    """Run a sidecar in this process until SIGTERM/SIGINT (``sidecar run``).

    It says it is ready as soon as the directory is its own and the event log
    exists: producers may append from then on, while the exporter (the
    OpenTelemetry SDK, requests: most of a start's time) is still loading. A
    glidein's set-up waits for that much only.
    """
    logging.basicConfig(level=logging.INFO, format="%(asctime)s gwtrace[%(process)d] %(levelname)s %(message)s")
    strip_userinfo_in_logs()            # no endpoint's user:password@ in sidecar.log
    _lower_priority()
    spool = _open_spool(directory)
    spool.acquire()
    create_event_log(spool.dir)
    make_jobs_dir(spool.dir)            # the jobs' own logs (channels.py): writable from "ready" on
    make_stderr_dir(spool.dir)          # where producers register their stderr (failure.py)
    make_resources_dir(spool.dir)       # where job wrappers register their jobs (resources.py)
    _preflight()
    early: List[int] = []          # a stop asked for while the exporter loads
    signal.signal(signal.SIGTERM, lambda signum, frame: early.append(signum))
    signal.signal(signal.SIGINT, lambda signum, frame: early.append(signum))
    config = glidein_config or os.environ.get("GLIDEIN_CONFIG")
    asker = start_job_asker(spool.dir, config)      # a job started right after "ready" asks too
    try:
        if ready_fd is not None:
            os.write(ready_fd, f"ready {os.getpid()}\n".encode())
            os.close(ready_fd)
        _run_sidecar(spool, config, asker, ship_to, decision_fd, early)
    finally:
        if asker is not None:           # its one owner: stopped once, however the sidecar ended
            asker.stop()
    return 0


def _run_sidecar(spool: Spool, config: Optional[str], asker: Optional[JobAsker], ship_to: "Optional[str | TextIO]",
                 decision_fd: Optional[int], early: List[int]) -> None:
    """The part of ``run_foreground`` after "ready": the exporter loads, the sidecar runs until stopped."""
    # start-up cost: the opentelemetry SDK loads in the daemon only (sidecar start|stop|status stay quick)
    from gwtrace.sidecar.destination import make_delivery
    from gwtrace.export.resource import GlideinIdentity, build_resource
    from gwtrace.sidecar.daemon import Sidecar
    from gwtrace.sidecar.ship import ship_stream

    # Spans, events and their dicts are acyclic and short-lived: collecting
    # cycles every 700 allocations costs the sidecar ~15% of its throughput.
    gc.set_threshold(50_000, 20, 20)
    resource = build_resource(config)
    stop_timeout = _float_env("GWTRACE_STOP_TIMEOUT", 10.0)
    sidecar = Sidecar(spool, make_delivery(), resource, stop_timeout=stop_timeout,
                      ship_to=ship_stream(ship_to), identity=GlideinIdentity(config))
    if decision_fd is not None:
        sidecar.policy.receive(decision_fd)     # the glidein's decision from `sidecar start` (enforce.py)
    sidecar.open()

    def on_signal(signum: int, frame: object) -> None:
        sidecar.request_stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)   # the pilot's terminal going away is not a stop
    if early:
        sidecar.request_stop()
    log.info("sidecar on %s exporting to %s", spool.dir, sidecar.destination)
    run_with_job_asker(sidecar, asker)      # sidecar.run(), jobs asking the controller through it


def _preflight() -> None:
    """What would stop the exporter later, found before "ready" so that the
    starter hears of it: the embedded store's home (gwtrace.home's rules)."""
    if os.environ.get("GWTRACE_EXPORT", "").strip().lower() == "ship-home" or otlp_env().configured:
        return
    private_dir(gwtrace_home())


def stop(directory: Optional[str], timeout: float, out: TextIO, ship_to: Optional[str] = None) -> int:
    """Stop the sidecar and wait until it has flushed; with none running,
    export whatever the directory still holds (spooled events, outbox).
    With ``ship_to``, what could not be delivered is then written there as
    blocks for `gwtrace ingest` (see shiphome.py)."""
    spool = _open_spool(_existing_directory(directory))
    if spool.is_owned():
        pid = spool.owner_pid()
        if pid is None:
            raise ControlError(f"{spool.dir} is locked but has no pid file")
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while spool.is_owned():
            if time.monotonic() > deadline:
                raise ControlError(f"sidecar {pid} did not stop within {timeout:.0f}s")
            time.sleep(0.02)
    else:
        _drain_without_daemon(spool)
    if ship_to and spool.batch_seqs():   # the usual case: none, the daemon shipped or delivered it all
        from gwtrace.sidecar.ship import ship_leftovers  # start-up cost: as in run_foreground (the SDK)

        ship_leftovers(spool, ship_to)
    print(f"gwtrace: sidecar stopped: {format_counters(spool.read_status())}", file=out)
    _remove_if_done(spool, out)
    return 0


def recover(directory: str) -> Spool:
    """``gwtrace ingest --spool``: export what a stopped sidecar's directory holds; a live sidecar's is refused."""
    spool = _open_spool(_existing_directory(directory))
    if spool.is_owned():
        raise ControlError(f"a live sidecar (pid {spool.owner_pid()}) owns {spool.dir}; "
                           "use `gwtrace sidecar stop` instead")
    _drain_without_daemon(spool)
    return spool


def _drain_without_daemon(spool: Spool) -> None:
    """What `stop` does when no sidecar runs: a foreground sidecar that stops at once."""
    from gwtrace.sidecar.destination import make_delivery  # start-up cost: as in run_foreground
    from gwtrace.export.resource import build_resource
    from gwtrace.sidecar.daemon import Sidecar

    sidecar = Sidecar(spool, make_delivery(), build_resource(os.environ.get("GLIDEIN_CONFIG")),
                      stop_timeout=_float_env("GWTRACE_STOP_TIMEOUT", 10.0))
    sidecar.open()
    sidecar.request_stop()
    sidecar.run()


def status(directory: Optional[str], out: TextIO) -> int:
    spool = _open_spool(_existing_directory(directory))
    st = spool.read_status()
    running = spool.is_owned()
    counters: Dict[str, int] = dict(st.get("counters", {}))
    if not counters:
        # Just started: the daemon says "ready" before it has counted anything.
        counters = dict.fromkeys(STATUS_COUNTERS + ("spans_pending", "spans_open", "outbox_bytes"), 0)
    if not running:
        # Nobody is reading the log: what is in it past the checkpoint is spooled.
        counters["log_bytes_unread"] = unread_log_bytes(spool)
    pid = spool.owner_pid() if running else None
    print(f"sidecar: {'running (pid %d)' % pid if running and pid else 'not running'}", file=out)
    print(f"dir: {spool.dir}", file=out)
    if st.get("destination"):
        print(f"destination: {st['destination']}", file=out)
    for key in ("last_error", "last_snapshot_error", "last_resource_error"):
        if st.get(key):
            print(f"{key}: {st[key]}", file=out)
    for key in sorted(counters):
        print(f"{key}: {counters[key]}", file=out)
    return 0


def _existing_directory(directory: Optional[str]) -> str:
    directory = directory or os.environ.get("GWTRACE_DIR")
    if not directory:
        raise ControlError("no sidecar directory: set GWTRACE_DIR (eval \"$(gwtrace sidecar start)\") or pass --dir")
    if not os.path.isdir(directory):
        raise ControlError(f"no sidecar directory at {directory}")
    return directory


def _open_spool(directory: str) -> Spool:
    try:
        return Spool(directory)
    except (SpoolError, OSError) as exc:
        raise ControlError(str(exc)) from None


def _lower_priority() -> None:
    """On a worker node the CPUs belong to the pilot's payload: the sidecar
    runs at nice 10 (GWTRACE_SIDECAR_NICE, 0 to keep the starter's), so that
    on a busy node it takes what the job leaves and only lags behind
    (it never drops: the event log is its queue)."""
    increment = int(_float_env("GWTRACE_SIDECAR_NICE", 10))
    if increment > 0:
        try:
            os.nice(increment)
        except OSError as exc:
            log.warning("cannot lower the sidecar's priority: %s", exc)


def _float_env(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, "") or default)
    except ValueError:
        return default
