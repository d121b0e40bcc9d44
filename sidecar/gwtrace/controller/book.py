"""The controller over one store: rules cached in memory for ``decide``, every change checked and audited.

Why a cache: a glidein start or a job start asks once, a busy factory many
times a second; ``decide`` reads the rules from memory (``decide.RuleIndex``)
and does no SQL. A change made through this object reloads them at once; a
change made by another process on the same store (``gwtrace control
--store``) is seen within ``recheck_s``, through one read of a revision
counter (``control_meta.rev``) that every write bumps.
"""

from __future__ import annotations

import json
import threading
import time
import weakref
from typing import Any, Callable, Dict, List, Mapping, Optional

from ..store import TraceStore
from . import table
from .commands import COMMAND_TTL_S, command_from_request, header_value, results_from_request
from .decide import RuleIndex, decide, explain
from .roles import Principal, may_command, may_read_audit, may_remove, may_set
from .rules import SCOPE_FIELDS, BadRule, Rule, check_operation, rule_from_request

_JOB_ID_KEYS = ("htcondor.job.id", "condor.job_id", "condor.job.id")
_OWNER_KEYS = ("htcondor.job.owner", "condor.owner")


class Refused(PermissionError):
    """Who asked may not do this: one line saying why (HTTP 403)."""


class NotFound(LookupError):
    """No such rule or command (HTTP 404)."""


class Controller:
    """Rules, decisions, the audit log and the back channel of one store."""

    def __init__(self, store: TraceStore, clock: Callable[[], float] = time.time, recheck_s: float = 2.0):
        self.store = store
        self.clock = clock
        self.recheck_s = recheck_s
        self._lock = threading.Lock()
        self._index = RuleIndex(())
        self._pending: frozenset = frozenset()
        self._rev = -1
        self._checked = float("-inf")

    # ------------------------------------------------------------------ cache

    def _fresh(self) -> None:
        """Reload rules and pending keys when the store's revision moved (checked every ``recheck_s``)."""
        now = time.monotonic()
        if now - self._checked < self.recheck_s:
            return
        with self._lock:
            if now - self._checked < self.recheck_s:
                return
            conn = self.store.reader()
            current = table.rev(conn)
            if current != self._rev:
                self._index = RuleIndex(table.rules(conn))
                self._pending = frozenset(table.pending_keys(conn, self.clock() - COMMAND_TTL_S))
                self._rev = current
            self._checked = now

    def _changed(self) -> None:
        self._checked = float("-inf")
        self._fresh()

    # ------------------------------------------------------------------ rules

    def index(self) -> RuleIndex:
        self._fresh()
        return self._index

    def decide(self, query: Mapping[str, Any]) -> Any:
        return decide(self.index(), query, self.clock())

    def explain(self, query: Mapping[str, Any], operation: Optional[str] = None) -> Dict[str, Any]:
        """Why the rules decide as they do for ``query`` (and ``operation``, a span name: BadRule when malformed)."""
        return explain(self.index(), query, self.clock(), check_operation(operation))

    def rules(self, include_expired: bool = False, who: Optional[Principal] = None) -> List[Rule]:
        """The rules; a user (``who``) sees those about no one in particular and their own, not other users'."""
        now = self.clock()
        user = who.name if who is not None and who.role == "user" else None
        return [r for r in self.index().rules if (include_expired or not r.expired(now))
                and (user is None or r.scope.get("owner", user) == user)]

    def set_rule(self, who: Principal, body: Mapping[str, Any]) -> Rule:
        """Check, keep and audit a new rule; returns it with its id."""
        if not isinstance(body, Mapping):
            raise BadRule("the body must be a JSON object")
        now = self.clock()
        asked = rule_from_request(body, now)
        new = Rule(scope=asked.scope, level=asked.level, sample_ratio=asked.sample_ratio, expires=asked.expires,
                   reason=asked.reason, set_by=who.name, role=who.role, created=now, operation=asked.operation)
        why = may_set(who, new)
        if why is not None:
            raise Refused(why)
        with self.store.transaction() as conn:
            kept = table.insert_rule(conn, new)
            table.audit(conn, now, who.name, who.role, "rule.set", kept.id, None, kept.to_dict())
            table.bump(conn)
        self._changed()
        return kept

    def remove_rule(self, who: Principal, rule_id: str) -> Rule:
        now = self.clock()
        with self.store.transaction() as conn:
            old = table.rule(conn, rule_id)
            if old is None:
                raise NotFound(f"no rule {str(rule_id)[:40]}")
            why = may_remove(who, old)
            if why is not None:
                raise Refused(why)
            table.delete_rule(conn, old.id)
            table.audit(conn, now, who.name, who.role, "rule.remove", old.id, old.to_dict(), None)
            table.bump(conn)
        self._changed()
        return old

    def audit(self, who: Principal, after: int = 0, limit: int = 100) -> List[Dict[str, Any]]:
        """The audit log; a user sees only their own entries."""
        mine = None if may_read_audit(who) else who.name
        return table.audit_rows(self.store.reader(), after, max(1, min(limit, 1000)), mine)

    # ----------------------------------------------------------- back channel

    def _target(self, key: str, job: Optional[str]) -> Dict[str, Optional[str]]:
        """The site of the glidein with this live key, and the owner of ``job`` on it (from its open spans)."""
        row = self.store.reader().execute("SELECT site FROM live_snapshots WHERE key = ?", (key,)).fetchone()
        if row is None:
            raise NotFound(f"no live glidein with key {key[:80]!r}: commands ride its snapshots")
        owner = None
        if job is not None:
            for span in self.store.live_open_spans(key):
                attrs = span.get("attributes", {})
                if any(str(attrs.get(k)) == job for k in _JOB_ID_KEYS if k in attrs):
                    owner = next((str(attrs[k]) for k in _OWNER_KEYS if k in attrs), None)
                    break
        return {"site": row[0], "owner": owner}

    def queue_command(self, who: Principal, body: Mapping[str, Any]) -> Dict[str, Any]:
        key, command = command_from_request(body)
        target = self._target(key, command.get("job"))
        why = may_command(who, target["site"], command.get("job"), target["owner"])
        if why is not None:
            raise Refused(why)
        now = self.clock()
        with self.store.transaction() as conn:
            kept = table.insert_command(conn, key, command, now, who.name, who.role)
            table.audit(conn, now, who.name, who.role, "command.queue", kept["id"], None,
                        dict(command, key=key))
            table.bump(conn)
        self._changed()
        return kept

    def commands_header(self, key: str) -> Optional[str]:
        """The ``Gwtrace-Commands`` value for a snapshot from ``key``, or None (no SQL unless some are pending)."""
        self._fresh()
        if key not in self._pending:
            return None
        pending = table.commands(self.store.reader(), key=key, state="pending")
        since = self.clock() - COMMAND_TTL_S
        return header_value([c for c in pending if c["queued"] > since])

    def command(self, who: Principal, command_id: str) -> Dict[str, Any]:
        found = table.command(self.store.reader(), command_id)
        if found is None or not (who.role in ("admin", "shifter") or found["set_by"] == who.name):
            raise NotFound(f"no command {str(command_id)[:40]} of yours")
        return found

    def record_results(self, body: Any) -> int:
        """Keep the node's results of commands queued for its key; returns how many were taken."""
        key, results = results_from_request(body)
        now = self.clock()
        accepted = 0
        with self.store.transaction() as conn:
            expired = table.expire_commands(conn, now - COMMAND_TTL_S)
            for result in results:
                found = table.command(conn, result["id"])
                if found is None or found["key"] != key or found["state"] != "pending":
                    continue
                table.finish_command(conn, found["id"], "done" if result["ok"] else "failed", result, now)
                summary = {k: v for k, v in result.items() if k != "text"}
                table.audit(conn, now, "node:" + key[:80], "pilot", "command.result", found["id"], None, summary)
                accepted += 1
            if accepted or expired:
                table.bump(conn)
        if accepted or expired:
            self._changed()
        return accepted


def question(source: Mapping[str, Any]) -> Dict[str, str]:
    """The scope fields of a decide body or query string (strings only, ≤ 256 characters)."""
    out = {}
    for key in SCOPE_FIELDS:
        value = source.get(key)
        if value is None or value == "":
            continue
        if not isinstance(value, str) or len(value) > 256:
            raise BadRule(f"{key} must be a string of at most 256 characters")
        out[key] = value.lower() if key == "trace_id" else value
    return out


_controllers: "weakref.WeakKeyDictionary[TraceStore, Controller]" = weakref.WeakKeyDictionary()
_controllers_lock = threading.Lock()


def controller_for(store: TraceStore) -> Controller:
    """The one Controller (and so the one cache) of a store in this process."""
    with _controllers_lock:
        found = _controllers.get(store)
        if found is None:
            found = _controllers[store] = Controller(store)
        return found


def dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))
