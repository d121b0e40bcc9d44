"""The controller's tables in the store (registered through ``store.parts`` by ``gwtrace.controller``).

``control_rules``     one row per rule (``r<n>``; numbers never reused); ``operation`` since version 2
                      (``migrate`` adds it to an older store, whose rules keep it NULL: no operation)
``control_audit``     every change and every back-channel command and result: who, role, when, what,
                      before and after (JSON)
``control_commands``  back-channel commands (``c<n>``) for a glidein (the live key), pending until the
                      node's result arrives (``done``/``failed``) or an hour passes (``expired``)
``control_meta``      ``rev``: bumped by every write, so a server's cached rules know when to reload
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any, Dict, List, Optional

from .rules import SCOPE_FIELDS, Rule

SCHEMA = """
CREATE TABLE IF NOT EXISTS control_rules (
    n            INTEGER PRIMARY KEY AUTOINCREMENT,
    scope        TEXT NOT NULL,
    level        TEXT,
    sample_ratio REAL,
    expires      REAL,
    reason       TEXT NOT NULL,
    set_by       TEXT NOT NULL,
    role         TEXT NOT NULL,
    created      REAL NOT NULL,
    operation    TEXT
);
CREATE TABLE IF NOT EXISTS control_audit (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT,
    at      REAL NOT NULL,
    who     TEXT NOT NULL,
    role    TEXT NOT NULL,
    action  TEXT NOT NULL,
    target  TEXT NOT NULL,
    before  TEXT,
    after   TEXT
);
CREATE TABLE IF NOT EXISTS control_commands (
    n       INTEGER PRIMARY KEY AUTOINCREMENT,
    key     TEXT NOT NULL,
    body    TEXT NOT NULL,
    queued  REAL NOT NULL,
    set_by  TEXT NOT NULL,
    role    TEXT NOT NULL,
    state   TEXT NOT NULL,
    result  TEXT,
    done_at REAL
);
CREATE INDEX IF NOT EXISTS control_commands_pending ON control_commands (state, key);
CREATE TABLE IF NOT EXISTS control_meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
"""

#: The version of these tables ``store.parts`` records: 2 added ``control_rules.operation``.
VERSION = 2

_RULE_COLUMNS = "n, scope, level, sample_ratio, expires, reason, set_by, role, created, operation"
_COMMAND_COLUMNS = "n, key, body, queued, set_by, role, state, result, done_at"


def migrate(conn: sqlite3.Connection) -> None:
    """Bring an older store's tables to ``VERSION`` (run by ``store.parts`` when the store has another version;
    safe to run again: a store made by this SCHEMA already has the column)."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(control_rules)")}
    if "operation" not in columns:
        conn.execute("ALTER TABLE control_rules ADD COLUMN operation TEXT")


def rev(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT value FROM control_meta WHERE name = 'rev'").fetchone()
    return row[0] if row else 0


def bump(conn: sqlite3.Connection) -> None:
    conn.execute("INSERT INTO control_meta (name, value) VALUES ('rev', 1) "
                 "ON CONFLICT(name) DO UPDATE SET value = value + 1")


def _rule(row: Any) -> Rule:
    n, scope, level, ratio, expires, reason, set_by, role, created, operation = row
    stored = json.loads(scope)
    return Rule(scope={k: stored[k] for k in SCOPE_FIELDS if k in stored}, level=level, sample_ratio=ratio,
                expires=expires, reason=reason, set_by=set_by, role=role, created=created, id=f"r{n}",
                operation=operation)


def rules(conn: sqlite3.Connection) -> List[Rule]:
    return [_rule(row) for row in conn.execute(f"SELECT {_RULE_COLUMNS} FROM control_rules ORDER BY n")]


def rule(conn: sqlite3.Connection, rule_id: str) -> Optional[Rule]:
    n = number(rule_id, "r")
    row = conn.execute(f"SELECT {_RULE_COLUMNS} FROM control_rules WHERE n = ?", (n,)).fetchone()
    return _rule(row) if row else None


def number(ident: str, prefix: str) -> int:
    """``r12`` -> 12; anything else -1 (found nowhere)."""
    text = str(ident)
    digits = text[1:] if text[:1] == prefix else ""
    return int(digits) if digits.isdigit() and len(digits) < 18 else -1


def insert_rule(conn: sqlite3.Connection, new: Rule) -> Rule:
    cur = conn.execute(
        "INSERT INTO control_rules (scope, level, sample_ratio, expires, reason, set_by, role, created, operation) "
        "VALUES (?,?,?,?,?,?,?,?,?)",
        (json.dumps(dict(new.scope), sort_keys=True), new.level, new.sample_ratio, new.expires, new.reason,
         new.set_by, new.role, new.created, new.operation))
    return rule(conn, f"r{cur.lastrowid}")  # type: ignore[return-value]


def delete_rule(conn: sqlite3.Connection, rule_id: str) -> None:
    conn.execute("DELETE FROM control_rules WHERE n = ?", (number(rule_id, "r"),))


def audit(conn: sqlite3.Connection, at: float, who: str, role: str, action: str, target: str,
          before: Any = None, after: Any = None) -> None:
    conn.execute("INSERT INTO control_audit (at, who, role, action, target, before, after) VALUES (?,?,?,?,?,?,?)",
                 (at, who, role, action, target, None if before is None else json.dumps(before),
                  None if after is None else json.dumps(after)))


def audit_rows(conn: sqlite3.Connection, after_seq: int = 0, limit: int = 100, who: Optional[str] = None
               ) -> List[Dict[str, Any]]:
    """The audit log from ``after_seq`` on, newest last, at most ``limit`` (only ``who``'s when given)."""
    query = "SELECT seq, at, who, role, action, target, before, after FROM control_audit WHERE seq > ?"
    args: List[Any] = [after_seq]
    if who is not None:
        query += " AND who = ?"
        args.append(who)
    query += " ORDER BY seq DESC LIMIT ?"
    args.append(limit)
    out = []
    for seq, at, name, role, action, target, before, after in conn.execute(query, args):
        out.append({"seq": seq, "at": at, "who": name, "role": role, "action": action, "target": target,
                    "before": json.loads(before) if before else None, "after": json.loads(after) if after else None})
    return out[::-1]


def _command(row: Any) -> Dict[str, Any]:
    n, key, body, queued, set_by, role, state, result, done_at = row
    return {"id": f"c{n}", "key": key, "command": json.loads(body), "queued": queued, "set_by": set_by,
            "role": role, "state": state, "result": json.loads(result) if result else None, "done_at": done_at}


def insert_command(conn: sqlite3.Connection, key: str, body: Dict[str, Any], now: float, who: str,
                   role: str) -> Dict[str, Any]:
    cur = conn.execute("INSERT INTO control_commands (key, body, queued, set_by, role, state) "
                       "VALUES (?,?,?,?,?, 'pending')", (key, json.dumps(body), now, who, role))
    return command(conn, f"c{cur.lastrowid}")  # type: ignore[return-value]


def command(conn: sqlite3.Connection, command_id: str) -> Optional[Dict[str, Any]]:
    row = conn.execute(f"SELECT {_COMMAND_COLUMNS} FROM control_commands WHERE n = ?",
                       (number(command_id, "c"),)).fetchone()
    return _command(row) if row else None


def commands(conn: sqlite3.Connection, key: Optional[str] = None, state: Optional[str] = None,
             limit: int = 100) -> List[Dict[str, Any]]:
    query, args = f"SELECT {_COMMAND_COLUMNS} FROM control_commands WHERE 1", []  # type: ignore[var-annotated]
    if key is not None:
        query += " AND key = ?"
        args.append(key)
    if state is not None:
        query += " AND state = ?"
        args.append(state)
    query += " ORDER BY n DESC LIMIT ?"
    args.append(limit)
    return [_command(row) for row in conn.execute(query, args)][::-1]


def pending_keys(conn: sqlite3.Connection, since: float) -> List[str]:
    return [k for (k,) in conn.execute("SELECT DISTINCT key FROM control_commands WHERE state = 'pending' "
                                       "AND queued > ?", (since,))]


def expire_commands(conn: sqlite3.Connection, before: float) -> int:
    return conn.execute("UPDATE control_commands SET state = 'expired' WHERE state = 'pending' AND queued <= ?",
                        (before,)).rowcount


def finish_command(conn: sqlite3.Connection, command_id: str, state: str, result: Dict[str, Any],
                   now: float) -> None:
    conn.execute("UPDATE control_commands SET state = ?, result = ?, done_at = ? WHERE n = ?",
                 (state, json.dumps(result), now, number(command_id, "c")))
