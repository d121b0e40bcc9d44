"""Asking the controller (``gwtrace serve``'s ``/v1/gwtrace/decide``) how much to trace, never for long.

A glidein asks once at start (``gwtrace sidecar start``, while the daemon it
forked boots: the question costs no interpreter of its own), a job through
the sidecar (``ask.py``). The answer says the level (``off | scripts |
functions | commands``) and a sampling ratio; the node applies
``wire.sampling.sampled(trace_id, ratio)`` itself when the answer did not.

Why a thread joined with a deadline rather than socket time-outs: a socket
time-out bounds each connect, send and read, and a server that trickles one
byte a second would hold the caller for ever. The request runs in a daemon
thread; whoever asked waits at most ``ASK_BUDGET_S`` and goes on with the
factory's default (``source=default``, and why: "controller unreachable",
"timed out", "HTTP 500"). The sidecar keeps an answer in its memory
(DecisionCache, never a file a job could rewrite) for its ``ttl_s``; a cached
one is ``source=cache``.

Standard library only, Python 3.9-compatible: this runs on worker nodes
before anything else is loaded.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import socket
import stat
import threading
import time
import urllib.parse
from typing import Any, Dict, Mapping, NamedTuple, Optional

from gwtrace.export.otlpenv import otlp_env
from gwtrace.wire.redact import strip_userinfo
from gwtrace.wire.sampling import sampled

LEVELS = ("off", "scripts", "functions", "commands")
DECIDE_PATH = "/v1/gwtrace/decide"
RESULTS_PATH = "/v1/gwtrace/control/results"
#: The whole question (connect, send, answer) waits at most this long: with the
#: rest of the work around it, a glidein or job is delayed by at most 1 s.
ASK_BUDGET_S = 0.85
MAX_ANSWER_BYTES = 64 * 1024
MAX_FIELD = 256
MAX_TTL_S = 24 * 3600.0
CONTROL_DIR = "control"
MAX_CACHE_ENTRIES = 4096
#: glidein_config attribute -> the decide body's field (docs/protocol.md).
IDENTITY_KEYS = {"GLIDECLIENT_Name": "frontend", "GLIDEIN_Factory": "factory", "GLIDEIN_Entry_Name": "entry",
                 "GLIDEIN_Site": "site", "GLIDEIN_UUID": "glidein_id"}


class Decision(NamedTuple):
    """What the node does: level None = its own default; sampled None = not decided (no trace id)."""

    level: Optional[str]
    ratio: Optional[float]
    sampled: Optional[bool]
    rule: Optional[str]
    source: str               # controller | cache | default
    why: str                  # the rule's reason, or why the default applies
    ttl_s: float = 0.0


class AskError(Exception):
    """A question without an answer; the message is the one-line reason recorded on the span."""


def controller_base(env: Optional[Mapping[str, str]] = None) -> str:
    """GWTRACE_CONTROLLER (a gwtrace serve's base URL, or its decide URL) without the path; '' if unset."""
    env = os.environ if env is None else env
    url = (env.get("GWTRACE_CONTROLLER") or "").strip()
    if not url or url.lower() in ("off", "none"):
        return ""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AskError(f"GWTRACE_CONTROLLER {strip_userinfo(url)!r} is not an http(s) URL")
    path = parts.path.rstrip("/")
    if path.endswith(DECIDE_PATH):
        path = path[: -len(DECIDE_PATH)]
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def glidein_identity(glidein_config: Optional[str]) -> Dict[str, str]:
    """The glidein's identity for the question, from glidein_config (the last line of a key wins)."""
    found: Dict[str, str] = {}
    if not glidein_config:
        return found
    try:
        with open(glidein_config, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.rstrip("\n").partition(" ")
                if key in IDENTITY_KEYS and value.strip():
                    found[IDENTITY_KEYS[key]] = value.strip()[:MAX_FIELD]
    except OSError:
        pass
    return found


def _post(url: str, body: bytes, headers: Mapping[str, str], timeout: float) -> "tuple[int, bytes]":
    parts = urllib.parse.urlsplit(url)
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = cls(parts.hostname, parts.port, timeout=timeout)
    try:
        conn.request("POST", parts.path or "/", body, dict(headers))
        resp = conn.getresponse()
        return resp.status, resp.read(MAX_ANSWER_BYTES + 1)
    finally:
        conn.close()


def post_json(url: str, payload: Any, budget: float = ASK_BUDGET_S,
              env: Optional[Mapping[str, str]] = None) -> Any:
    """POST ``payload`` as JSON with the OTLP bearer token; the JSON answer, or AskError within ``budget`` s."""
    headers = {"Content-Type": "application/json", **otlp_env(env).headers}
    body = json.dumps(payload, separators=(",", ":")).encode()
    box: Dict[str, Any] = {}

    def run() -> None:
        try:
            box["answer"] = _post(url, body, headers, budget)
        except Exception as exc:  # noqa: BLE001 - every failure is a reason, never a traceback
            box["error"] = exc

    thread = threading.Thread(target=run, name="gwtrace-ask", daemon=True)
    thread.start()
    thread.join(budget)
    if thread.is_alive():
        raise AskError("timed out")
    if "error" in box:
        err = box["error"]
        if isinstance(err, (socket.timeout, TimeoutError)):       # socket.timeout: Python 3.9
            raise AskError("timed out")
        if isinstance(err, OSError):
            raise AskError("controller unreachable")
        raise AskError(f"bad answer ({type(err).__name__})")
    status, data = box["answer"]
    if status != 200:
        raise AskError(f"HTTP {status}")
    if len(data) > MAX_ANSWER_BYTES:
        raise AskError("answer too long")
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise AskError("answer is not JSON") from None


def parse_answer(answer: Any, trace_id: Optional[str]) -> Decision:
    """The contract's answer as a Decision; AskError on anything else (a controller never misleads a node)."""
    if not isinstance(answer, dict):
        raise AskError("answer is not a JSON object")
    level = answer.get("level")
    if level is not None and level not in LEVELS:
        raise AskError("answer has an unknown level")
    ratio = answer.get("sample_ratio")
    if ratio is not None:
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0.0 <= ratio <= 1.0:
            raise AskError("answer has a bad sample_ratio")
        ratio = float(ratio)
    rule = answer.get("rule")
    rule = str(rule)[:MAX_FIELD] if rule is not None else None
    ttl = answer.get("ttl_s")
    ttl = float(ttl) if isinstance(ttl, (int, float)) and not isinstance(ttl, bool) and ttl > 0 else 0.0
    is_sampled = None
    if trace_id and ratio is not None:
        is_sampled = sampled(trace_id, ratio)     # our own rule on our own id: the answer's flag is not trusted
    reason = answer.get("reason")
    why = f"rule {rule}" if rule is not None else "no rule"
    if isinstance(reason, str) and reason.strip():
        why += ": " + " ".join(reason.split())[:200]
    return Decision(level if rule is not None else None, ratio, is_sampled, rule, "controller", why, min(ttl, MAX_TTL_S))


def read_small(path: str, limit: int = MAX_ANSWER_BYTES) -> bytes:
    """At most ``limit`` bytes of a regular file, never following a symlink nor blocking on a FIFO
    (job wrappers share the control directory: what is there may be anything). OSError otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path}: not a regular file")
        return os.read(fd, limit)
    finally:
        os.close(fd)


def write_replace(path: str, text: str) -> None:
    """Replace ``path`` atomically with ``text``: a fresh private temporary file (O_EXCL, no symlink
    followed), then rename (which replaces a symlink, never writes through it)."""
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        os.unlink(tmp)
    except OSError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def _cache_key(question: Mapping[str, Any]) -> str:
    fields = {k: v for k, v in question.items() if k != "trace_id"}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:24]


class DecisionCache:
    """Answers kept for their ``ttl_s``, in this process's memory only.

    Not a file: a job runs as the pilot's user and could rewrite any file of
    the state directory, and a cached answer it planted would decide the next
    job (docs/protocol.md, "Trust boundary"). Bounded: the entries that
    expire first go when MAX_CACHE_ENTRIES are kept."""

    def __init__(self) -> None:
        self.entries: Dict[str, "tuple[float, Dict[str, Any]]"] = {}
        self._lock = threading.Lock()

    def get(self, question: Mapping[str, Any], now: float) -> Optional[Dict[str, Any]]:
        """The cached answer to the same question (trace id aside), if not expired."""
        with self._lock:
            entry = self.entries.get(_cache_key(question))
        if entry is not None and entry[0] > now:
            return entry[1]
        return None

    def put(self, question: Mapping[str, Any], answer: Mapping[str, Any], ttl: float, now: float) -> None:
        if ttl <= 0 or not isinstance(answer, Mapping):
            return
        with self._lock:
            self.entries[_cache_key(question)] = (now + ttl, dict(answer))
            if len(self.entries) > MAX_CACHE_ENTRIES:
                for key in [k for k, (expires, _) in self.entries.items() if expires <= now]:
                    del self.entries[key]
                while len(self.entries) > MAX_CACHE_ENTRIES:
                    del self.entries[min(self.entries, key=lambda k: self.entries[k][0])]


def decide(question: Mapping[str, Any], cache: Optional[DecisionCache] = None, budget: float = ASK_BUDGET_S,
           env: Optional[Mapping[str, str]] = None) -> Decision:
    """The decision for ``question`` (the contract's body): cached, asked, or the default and why.

    Never raises and never takes more than ``budget`` seconds (plus a file read).
    """
    trace_id = question.get("trace_id") or None
    try:
        base = controller_base(env)
    except AskError as exc:
        return Decision(None, None, None, None, "default", str(exc))
    if not base:
        return Decision(None, None, None, None, "default", "no controller configured")
    now = time.time()
    answer = cache.get(question, now) if cache is not None else None
    if answer is not None:
        try:
            return parse_answer(answer, trace_id)._replace(source="cache")
        except AskError:
            pass
    try:
        answer = post_json(base + DECIDE_PATH, {k: v for k, v in question.items() if v not in (None, "")},
                           budget, env)
        decision = parse_answer(answer, trace_id)
    except AskError as exc:
        return Decision(None, None, None, None, "default", str(exc))
    if cache is not None:
        cache.put(question, answer, decision.ttl_s, now)
    return decision


def with_default(decision: Decision, level: str, ratio: float, trace_id: Optional[str]) -> Decision:
    """Fill what the controller left open (no rule, no answer) with the factory's default level and ratio."""
    out = decision
    if out.level is None:
        out = out._replace(level=level)
    if out.ratio is None:
        out = out._replace(ratio=ratio)
    if out.sampled is None and trace_id and out.ratio is not None:
        out = out._replace(sampled=sampled(trace_id, out.ratio))
    return out


def glidein_decision(glidein_config: Optional[str], ask: Mapping[str, str]) -> Decision:
    """The glidein's one question (``sidecar start --ask-trace-id``): its identity from glidein_config,
    its trace id, the factory's default level and ratio (``ask``) for what the controller leaves open."""
    try:
        ratio = float(ask.get("ratio") or 1.0)
        if not 0.0 <= ratio <= 1.0:
            raise ValueError(ratio)
    except ValueError:
        ratio = 1.0
    trace_id = ask["trace_id"]
    question = {"subject": "glidein", **glidein_identity(glidein_config), "trace_id": trace_id}
    return with_default(decide(question), ask.get("level") or "", ratio, trace_id)


def tell_glidein_decision(glidein_config: Optional[str], ask: Mapping[str, str], out: Any,
                          tell_fd: Optional[int]) -> None:
    """``sidecar start --ask-trace-id``: the glidein's decision printed for the set-up's ``eval``, and
    one JSON line of it written into the daemon's hand-over pipe (closed either way: the daemon stops
    waiting at EOF). The decision the sidecar enforces (enforce.py) never passes through a file."""
    try:
        decision = glidein_decision(glidein_config, ask)
        out.write("\n".join(shell_lines(decision)) + "\n")
        if tell_fd is not None:
            line = json.dumps({"level": decision.level, "sampled": decision.sampled, "trace_id": ask.get("trace_id")})
            try:
                os.write(tell_fd, line.encode() + b"\n")
            except OSError:
                pass            # the daemon is gone: nothing to enforce
    finally:
        if tell_fd is not None:
            os.close(tell_fd)


def shell_lines(decision: Decision) -> "list[str]":
    """The decision as shell assignments (``gwtrace_control_*``, not exported) for the set-up's ``eval``."""
    import shlex

    values = {
        "gwtrace_control_level": decision.level or "",
        "gwtrace_control_ratio": "" if decision.ratio is None else repr(decision.ratio),
        "gwtrace_control_sampled": {True: "1", False: "0", None: ""}[decision.sampled],
        "gwtrace_control_rule": decision.rule or "",
        "gwtrace_control_source": decision.source,
        "gwtrace_control_why": decision.why,
    }
    return [f"{k}={shlex.quote(v)};" for k, v in values.items()]
