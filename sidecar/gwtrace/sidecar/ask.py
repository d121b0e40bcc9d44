"""Jobs ask through the sidecar: the job wrapper's request file in, the decision file out, within 1 s.

The job wrapper is POSIX sh and must not wait long nor speak HTTP. So when a
controller is configured the sidecar marks ``control/asking`` (before "ready": a job
started at once asks too); a wrapper that
sees it writes ``control/ask/<trace id>-<span id>.req``, one line
``job id<TAB>owner<TAB>trace id``, and looks for ``<same>.ans`` for at most
~0.9 s, else goes on with the glidein's decision (the flags of the
traceparent it was handed). This thread lists ``control/ask/`` every
time a wrapper rings (one byte into the FIFO ``control/ask.fifo``; at least
every POLL_S without), asks the controller for each new request (decide.py, the glidein's
identity added, its answer cached for ``ttl_s``) in a thread of its own, and
writes the answer atomically: one line
``level<TAB>sampled<TAB>rule<TAB>source<TAB>why``, "-" for a field left
open (no level or sampled: the controller left it to the node's default; a
shell's ``read`` would fold two TABs into one). Requests and answers older
than STALE_S are removed. What a job writes there is not trusted: names and
fields are checked, sizes bounded, at most MAX_IN_FLIGHT questions at once.
"""

from __future__ import annotations

import logging
import os
import re
import select
import threading
import time
from typing import Any, Dict, List, Mapping, Optional, Tuple

from gwtrace.sidecar.commands import JOB_ID, make_control_dirs
from gwtrace.sidecar.decide import (CONTROL_DIR, AskError, Decision, DecisionCache, controller_base, decide,
                                    glidein_identity, read_small, write_replace)
from gwtrace.sidecar.enforce import Policy

log = logging.getLogger("gwtrace.sidecar.ask")

ASK_DIR = "ask"
MARK = "asking"
#: How often the directory is listed when no wrapper rings (the FIFO wakes the thread at once).
POLL_S = 1.0
BELL = "ask.fifo"
#: The sidecar's share of the wrapper's 1 s: the wrapper polls, and gives up at ~0.9 s.
JOB_BUDGET_S = 0.75
STALE_S = 10.0
MAX_IN_FLIGHT = 16
MAX_REQUEST_BYTES = 1024
#: Answers given before the sidecar's policy exists (the asker starts before "ready", the policy with
#: the exporter a second later): kept for it, at most this many (the jobs of that first second).
MAX_EARLY = 256
_NAME = re.compile(r"\A([0-9a-f]{32})-([0-9a-f]{16})\.req\Z")
_OWNER = re.compile(r"\A[A-Za-z0-9._@+-]{1,256}\Z")


def answer_line(decision: Decision) -> str:
    """The answer file's one line (tabs and newlines never inside a field)."""
    def clean(text: str) -> str:
        return " ".join(text.split())[:256]

    sampled = {True: "1", False: "0", None: "-"}[decision.sampled]
    return "\t".join([decision.level or "-", sampled, clean(decision.rule or "") or "-", decision.source,
                      clean(decision.why) or "-"]) + "\n"


def parse_request(data: bytes, trace_id: str) -> Optional[Dict[str, str]]:
    """The job's question from its request file, or None (incomplete, or not a request)."""
    if len(data) > MAX_REQUEST_BYTES or not data.endswith(b"\n"):
        return None
    try:
        fields = data.decode("ascii").rstrip("\n").split("\t")
    except UnicodeDecodeError:
        return None
    if len(fields) != 3 or fields[2] != trace_id:
        return None
    job_id, owner = fields[0], fields[1]
    question = {"subject": "job", "trace_id": trace_id}
    if JOB_ID.match(job_id):
        question["job_id"] = job_id
    if _OWNER.match(owner):
        question["owner"] = owner
    return question


class JobAsker:
    """The thread answering job wrappers' questions for one state directory."""

    def __init__(self, directory: str, glidein_config: Optional[str],
                 env: Optional[Mapping[str, str]] = None, policy: Optional[Policy] = None) -> None:
        self.dir = os.path.join(directory, CONTROL_DIR, ASK_DIR)
        self.cache = DecisionCache()
        self.policy = policy              # the sidecar's: what it exports of the job follows this answer
        self._policy_lock = threading.Lock()
        self._early: List[Tuple[str, Optional[str], Optional[str], Optional[bool]]] = []
        self.mark = os.path.join(directory, CONTROL_DIR, MARK)
        self.identity = glidein_identity(glidein_config)
        self.env = env
        self.seen: Dict[str, float] = {}
        self.in_flight = threading.BoundedSemaphore(MAX_IN_FLIGHT)
        self.counters = {"job_questions": 0, "job_questions_dropped": 0}
        self._stop = threading.Event()
        self._bell_r = self._bell_w = -1
        self._thread = threading.Thread(target=self._loop, name="gwtrace-ask", daemon=True)

    def start(self) -> "JobAsker":
        """Make the bell (a FIFO, both ends held open here: a ring never blocks a wrapper, and the
        read end never sees EOF), mark the directory as asking, start the thread."""
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        bell = os.path.join(os.path.dirname(self.dir), BELL)
        try:
            os.unlink(bell)
        except OSError:
            pass
        os.mkfifo(bell, 0o600)
        self._bell_r = os.open(bell, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        self._bell_w = os.open(bell, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with open(self.mark, "w", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()}\n")
        self._thread.start()
        return self

    def stop(self) -> None:
        try:
            os.unlink(self.mark)
        except OSError:
            pass
        self._stop.set()
        self._ring()
        self._thread.join(timeout=1.0)
        for fd in (self._bell_r, self._bell_w):
            if fd >= 0:
                os.close(fd)
        self._bell_r = self._bell_w = -1

    def _ring(self) -> None:
        try:
            os.write(self._bell_w, b"x")
        except OSError:          # full (it will be read) or closed
            pass

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                select.select([self._bell_r], [], [], POLL_S)
                while os.read(self._bell_r, 4096):
                    pass
            except BlockingIOError:              # drained
                pass
            except OSError:
                time.sleep(POLL_S)
            if self._stop.is_set():
                return
            try:
                self.poll()
            except Exception as exc:  # noqa: BLE001 - never fatal: a job goes on with its default
                log.warning("job questions: %s: %s", type(exc).__name__, exc)

    def poll(self) -> int:
        """Take the new requests (up to the in-flight bound); remove stale files. Returns how many were taken."""
        now = time.time()
        taken = 0
        try:
            names = os.listdir(self.dir)
        except OSError:
            return 0
        for name in names:
            path = os.path.join(self.dir, name)
            m = _NAME.match(name)
            if m is None or name in self.seen:
                if name in self.seen and now - self.seen[name] > STALE_S or m is None and self._old(path, now):
                    self._remove(path)
                    self.seen.pop(name, None)
                continue
            try:
                data = read_small(path, MAX_REQUEST_BYTES + 1)
            except OSError:
                if self._old(path, now):
                    self._remove(path)
                continue
            question = parse_request(data, m.group(1))
            if question is None:
                if self._old(path, now):
                    self._remove(path)
                continue
            self.seen[name] = now
            if not self.in_flight.acquire(blocking=False):
                self.counters["job_questions_dropped"] += 1      # the wrapper falls back after its wait
                continue
            self.counters["job_questions"] += 1
            threading.Thread(target=self._answer, args=(path[:-4] + ".ans", question), daemon=True).start()
            taken += 1
        return taken

    def _answer(self, answer_path: str, question: Dict[str, str]) -> None:
        try:
            decision = decide({**self.identity, **question}, self.cache, JOB_BUDGET_S, self.env)
            self._enforce(os.path.basename(answer_path)[:-4], question.get("job_id"),    # before the wrapper
                          decision.level, decision.sampled)                              # reads the answer
            write_replace(answer_path, answer_line(decision))
        except OSError as exc:
            log.warning("job question not answered: %s", exc)
        finally:
            self.in_flight.release()

    def attach_policy(self, policy: Optional[Policy]) -> None:
        """The sidecar's policy, once it exists: the answers given before are handed to it first (the
        sidecar reads no span of those jobs before this, control.py attaches it before ``run()``)."""
        with self._policy_lock:
            self.policy = policy
            early, self._early = self._early, []
            if policy is not None:
                for channel, job_id, level, sampled in early:
                    policy.set_job(channel, job_id, level, sampled)
        if early:
            log.info("%d job question(s) answered while the exporter loaded", len(early))

    def _enforce(self, channel: str, job_id: Optional[str], level: Optional[str], sampled: Optional[bool]) -> None:
        with self._policy_lock:
            if self.policy is not None:
                self.policy.set_job(channel, job_id, level, sampled)
            elif len(self._early) < MAX_EARLY:
                self._early.append((channel, job_id, level, sampled))

    @staticmethod
    def _old(path: str, now: float) -> bool:
        try:
            return now - os.lstat(path).st_mtime > STALE_S
        except OSError:
            return False

    @staticmethod
    def _remove(path: str) -> None:
        try:
            os.unlink(path)
        except OSError:
            pass




def start_job_asker(directory: str, glidein_config: Optional[str]) -> Optional[JobAsker]:
    """When a controller is configured (GWTRACE_CONTROLLER), a JobAsker answering the jobs from now on;
    the control directories are made either way (the back channel's level files, the scratch
    registrations). control.py starts it before saying "ready", so that a job started the moment the
    sidecar is up asks too (the exporter loads meanwhile; its policy is attached by
    ``run_with_job_asker``). Trouble is logged, never fatal: jobs then go on with the glidein's decision."""
    try:
        make_control_dirs(directory)
        if controller_base():
            return JobAsker(directory, glidein_config).start()
    except (AskError, OSError) as exc:
        log.warning("jobs will not ask the controller: %s", exc)
    return None


def run_with_job_asker(sidecar: Any, asker: Optional[JobAsker]) -> None:
    """``sidecar.run()`` with the asker (if any) enforcing its answers through the sidecar's policy
    (whoever started the asker stops it: control.py's ``run_foreground``)."""
    if asker is not None:
        asker.attach_policy(getattr(sidecar, "policy", None))
    sidecar.run()
