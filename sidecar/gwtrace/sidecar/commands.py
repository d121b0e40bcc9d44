"""The back channel: commands a gwtrace serve sends in its answer to a snapshot, carried out here.

No connection ever comes in to a worker node: the answer (200) to the
sidecar's ``POST /v1/gwtrace/snapshot`` carries the commands pending for this
glidein in its ``Gwtrace-Commands`` header (a JSON list, at most 4096 bytes;
docs/protocol.md, "The back channel"). They are carried out in the snapshot
thread, never the reader's, and the results go back with one
``POST /v1/gwtrace/control/results`` to the same server:

* ``level``: written where what starts next reads it. ``job`` null: the
  glidein's level file (``level`` in the state directory, which the step hook
  and script_env.sh read with ``read -r``) and ``control/jobs-level`` (every
  later job); ``job`` "123.0": ``control/job-level/123.0`` (that job, if it
  starts later). Files are replaced atomically, never half-written.
* ``tail``: the last ``max_bytes`` of a file under the job's scratch
  directory (registered by the job wrapper in ``control/scratch/<job id>``),
  allow-listed, bounded and redacted (tail.py).

Delivery is at least once: the server resends a command until its result
arrives. An id already done is not done again; its result is sent again
(it may be the result that was lost). Commands that arrived while the node
was offline never arrive: nothing to do.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections import OrderedDict
from typing import Any, Callable, Dict, List, Mapping, Optional

from gwtrace.sidecar.decide import CONTROL_DIR, LEVELS, RESULTS_PATH, AskError, post_json, read_small, write_replace
from gwtrace.sidecar.enforce import Policy
from gwtrace.sidecar.tail import TailRefused, file_tail

log = logging.getLogger("gwtrace.sidecar.commands")

HEADER = "Gwtrace-Commands"
MAX_HEADER_BYTES = 4096
MAX_COMMANDS = 64
#: Results remembered (to answer a resent command again without redoing it).
MAX_DONE = 1024
RESULTS_BUDGET_S = 5.0
#: A results POST's body stays under the server's 2 MiB; one result under half of it.
MAX_BODY_BYTES = 2 * 1024 * 1024 - 4096
MAX_RESULT_BYTES = 1024 * 1024 + 65536
JOB_ID = re.compile(r"\A[0-9]{1,12}\.[0-9]{1,9}\Z")
COMMAND_ID = re.compile(r"\A[A-Za-z0-9_.:-]{1,64}\Z")
LEVEL_FILE = "level"
JOBS_LEVEL = "jobs-level"
JOB_LEVEL_DIR = "job-level"
SCRATCH_DIR = "scratch"


def make_control_dirs(directory: str) -> None:
    """``control/`` and its job subdirectories (0700), where job wrappers register and read."""
    for sub in ("", JOB_LEVEL_DIR, SCRATCH_DIR, "ask"):
        os.makedirs(os.path.join(directory, CONTROL_DIR, sub), mode=0o700, exist_ok=True)


def parse_header(value: Optional[str]) -> List[Dict[str, Any]]:
    """The commands in a ``Gwtrace-Commands`` header; [] for none or anything malformed (logged once)."""
    if not value:
        return []
    if len(value) > MAX_HEADER_BYTES:
        log.warning("ignoring a %s header of %d bytes (more than %d)", HEADER, len(value), MAX_HEADER_BYTES)
        return []
    try:
        commands = json.loads(value)
    except ValueError:
        log.warning("ignoring a %s header that is not JSON", HEADER)
        return []
    if not isinstance(commands, list):
        return []
    return [c for c in commands[:MAX_COMMANDS] if isinstance(c, dict)]


class CommandRunner:
    """Carries out the back channel's commands for one sidecar (its state directory)."""

    def __init__(self, directory: str, results_url: str, key: str,
                 env: Optional[Mapping[str, str]] = None,
                 post: Optional[Callable[[str, Any], Any]] = None, policy: Optional[Policy] = None) -> None:
        self.dir = directory
        self.policy = policy              # the sidecar's: the level it enforces changes here, not in a file
        self.results_url = results_url
        self.key = key
        self.env = env
        self.post = post or (lambda url, payload: post_json(url, payload, RESULTS_BUDGET_S, env))
        self.done: "OrderedDict[str, Dict[str, Any]]" = OrderedDict()
        self.counters = {"commands_done": 0, "commands_refused": 0, "command_results_failed": 0}
        make_control_dirs(directory)

    def handle(self, header: Optional[str]) -> List[Dict[str, Any]]:
        """Carry out the header's commands (once per id) and POST their results; return the results."""
        results = []
        for command in parse_header(header):
            cid = command.get("id")
            if not isinstance(cid, str) or not COMMAND_ID.match(cid):
                continue                              # no id to answer to: nothing can be said about it
            if cid in self.done:
                results.append(self.done[cid])        # done already: its result again, not the command
                continue
            result = self.run(command)
            self.done[cid] = result
            while len(self.done) > MAX_DONE:
                self.done.popitem(last=False)
            self.counters["commands_done" if result["ok"] else "commands_refused"] += 1
            results.append(result)
        for batch in batches(results):
            try:
                self.post(self.results_url, {"key": self.key, "results": batch})
            except AskError as exc:
                self.counters["command_results_failed"] += 1
                log.warning("command results not delivered: %s", exc)
        return results

    def run(self, command: Mapping[str, Any]) -> Dict[str, Any]:
        cid = command["id"]
        try:
            op = command.get("op")
            if op == "level":
                self._level(command)
                return {"id": cid, "ok": True}
            if op == "tail":
                return {"id": cid, "ok": True, **self._tail(command)}
            raise TailRefused(f"unknown op {str(op)[:40]!r}")
        except TailRefused as exc:
            return {"id": cid, "ok": False, "error": str(exc)}
        except OSError as exc:
            return {"id": cid, "ok": False, "error": f"{type(exc).__name__}: {exc.strerror or exc}"}

    def _job(self, command: Mapping[str, Any]) -> Optional[str]:
        job = command.get("job")
        if job is None:
            return None
        if not isinstance(job, str) or not JOB_ID.match(job):
            raise TailRefused("job must be a job id like 123.0")
        return job

    def _level(self, command: Mapping[str, Any]) -> None:
        level = command.get("level")
        if level not in LEVELS:
            raise TailRefused(f"level must be one of {', '.join(LEVELS)}")
        job = self._job(command)
        if self.policy is not None:
            self.policy.set_level(level, job)
        control = os.path.join(self.dir, CONTROL_DIR)
        if job is None:
            write_replace(os.path.join(self.dir, LEVEL_FILE), level + "\n")
            write_replace(os.path.join(control, JOBS_LEVEL), level + "\n")
        else:
            write_replace(os.path.join(control, JOB_LEVEL_DIR, job), level + "\n")
        log.info("level %s for %s (command %s)", level, f"job {job}" if job else "the glidein", command["id"])

    def _tail(self, command: Mapping[str, Any]) -> Dict[str, Any]:
        job = self._job(command)
        if job is None:
            raise TailRefused("tail needs a job")
        scratch = registered_scratch(self.dir, job)
        if scratch is None:
            raise TailRefused(f"job {job} is not running here")
        return file_tail(scratch, command.get("path"), command.get("max_bytes", 65536))


def _size(result: Mapping[str, Any]) -> int:
    return len(json.dumps(result, separators=(",", ":")))


def fit(result: Dict[str, Any], limit: int = MAX_RESULT_BYTES) -> Dict[str, Any]:
    """A result whose JSON fits ``limit`` bytes: a tail's text shortened from its start (JSON escapes
    may make a 1 MiB tail several times longer), ``truncated`` then true."""
    text = result.get("text")
    while isinstance(text, str) and text and _size(result) > limit:
        text = text[len(text) - len(text) * 3 // 4:]
        result = dict(result, text=text, truncated=True)
    return result


def batches(results: List[Dict[str, Any]], limit: int = MAX_BODY_BYTES) -> List[List[Dict[str, Any]]]:
    """The results in POST bodies of at most ``limit`` bytes (the server takes 2 MiB), in order."""
    out: List[List[Dict[str, Any]]] = []
    size = limit
    for result in results:
        result = fit(result)
        n = _size(result) + 1
        if size + n > limit:
            out.append([])
            size = 200                         # the envelope: key, brackets
        out[-1].append(result)
        size += n
    return out


def registered_scratch(directory: str, job: str) -> Optional[str]:
    """The scratch directory the job wrapper registered for ``job``: absolute, not "/", ours; else None."""
    try:
        path = read_small(os.path.join(directory, CONTROL_DIR, SCRATCH_DIR, job), 4097).decode().split("\n")[0]
    except (OSError, UnicodeDecodeError):
        return None
    if not path.startswith("/") or os.path.realpath(path) == "/":
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    if st.st_uid != os.getuid():
        return None
    return path


def results_url(snapshot_url: str) -> str:
    """The results URL of the server a snapshot URL names (``.../v1/gwtrace/snapshot`` -> ``.../v1/gwtrace/control/results``)."""
    base = snapshot_url.split("?", 1)[0].rstrip("/")
    suffix = "/v1/gwtrace/snapshot"
    if base.endswith(suffix):
        base = base[: -len(suffix)]
    return base + RESULTS_PATH
