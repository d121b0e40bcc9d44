"""The store's tables, and the migrations from older files.

The layout and why it is so are described in the package docstring.  A file
records its layout in ``PRAGMA user_version``; opening an older file migrates
it in place, a newer one is refused rather than misread.
"""

from __future__ import annotations

import sqlite3
from typing import Optional

from . import glidein_parts, glideins, live, ops, parts

SCHEMA_VERSION = 9  # 9: glidein_files (the files' record of each glidein, merged with its trace)
# 8: trace_ops with the start range of each operation, operations.max_lag_ns

_SCHEMA = """
CREATE TABLE IF NOT EXISTS resources (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    body         BLOB    NOT NULL,
    schema_url   TEXT    NOT NULL DEFAULT '',
    service      TEXT    NOT NULL,
    glidein_uuid TEXT,
    UNIQUE (body, schema_url)
);
CREATE INDEX IF NOT EXISTS resources_service ON resources (service);
CREATE INDEX IF NOT EXISTS resources_glidein ON resources (glidein_uuid);

CREATE TABLE IF NOT EXISTS resource_attrs (
    key         TEXT    NOT NULL,
    value       TEXT    NOT NULL,
    resource_id INTEGER NOT NULL,
    PRIMARY KEY (key, value, resource_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS resource_attrs_resource ON resource_attrs (resource_id);

CREATE TABLE IF NOT EXISTS chunks (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    trace_id      BLOB    NOT NULL,
    resource_id   INTEGER NOT NULL,
    start_ns      INTEGER NOT NULL,
    max_start_ns  INTEGER NOT NULL,
    end_ns        INTEGER NOT NULL,
    max_dur_ns    INTEGER NOT NULL,
    n_spans       INTEGER NOT NULL,
    n_errors      INTEGER NOT NULL,
    status        INTEGER NOT NULL,
    root_name     TEXT,
    root_start_ns INTEGER,
    first_name    TEXT    NOT NULL,
    span_ids      BLOB    NOT NULL,
    body          BLOB    NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_trace ON chunks (trace_id);
CREATE INDEX IF NOT EXISTS chunks_resource ON chunks (resource_id, start_ns);

CREATE TABLE IF NOT EXISTS traces (
    trace_id      BLOB    PRIMARY KEY,
    start_ns      INTEGER NOT NULL,
    max_start_ns  INTEGER NOT NULL,
    end_ns        INTEGER NOT NULL,
    n_spans       INTEGER NOT NULL,
    n_errors      INTEGER NOT NULL,
    status        INTEGER NOT NULL,
    root_name     TEXT,
    root_start_ns INTEGER,
    root_service  TEXT,
    first_name    TEXT    NOT NULL,
    first_service TEXT    NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS traces_start ON traces (start_ns);
CREATE INDEX IF NOT EXISTS traces_status ON traces (status, start_ns);

CREATE TABLE IF NOT EXISTS trace_resources (
    resource_id INTEGER NOT NULL,
    trace_id    BLOB    NOT NULL,
    PRIMARY KEY (resource_id, trace_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS trace_resources_trace ON trace_resources (trace_id);

-- Keyed by trace first: a new trace's operations land in one B-tree page, not
-- one page per operation (plus an index) as with (service, name, kind) first.
-- "Traces with operation X" is an EXISTS per candidate trace instead.
-- min/max_start_ns: the earliest and latest start of the trace's spans of that
-- operation, so that "a span of X starts in [a, b]" (Jaeger's search by
-- operation and window) is decided without decoding chunks, the candidates coming
-- from traces_start, bounded on both sides by operations.max_lag_ns (store/ops.py).
CREATE TABLE IF NOT EXISTS trace_ops (
    trace_id     BLOB    NOT NULL,
    service      TEXT    NOT NULL,
    name         TEXT    NOT NULL,
    kind         INTEGER NOT NULL,
    min_start_ns INTEGER NOT NULL,
    max_start_ns INTEGER NOT NULL,
    PRIMARY KEY (trace_id, service, name, kind)
) WITHOUT ROWID;

-- generation: bumped by every purge, so that other processes drop their caches
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT OR IGNORE INTO meta (key, value) VALUES ('generation', 0);

-- max_lag_ns: the largest max_start_ns - traces.start_ns of the operation in any
-- trace (only grows): a span of it starting in [a, b] is in a trace that
-- started in [a - max_lag_ns, b].
CREATE TABLE IF NOT EXISTS operations (
    service       TEXT    NOT NULL,
    name          TEXT    NOT NULL,
    kind          INTEGER NOT NULL,
    max_lag_ns    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (service, name, kind)
) WITHOUT ROWID;
"""

TRACE_UPSERT = """
INSERT INTO traces (trace_id, start_ns, max_start_ns, end_ns, n_spans, n_errors, status,
                    root_name, root_start_ns, root_service, first_name, first_service)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (trace_id) DO UPDATE SET
    start_ns      = min(start_ns, excluded.start_ns),
    max_start_ns  = max(max_start_ns, excluded.max_start_ns),
    end_ns        = max(end_ns, excluded.end_ns),
    n_spans       = n_spans + excluded.n_spans,
    n_errors      = n_errors + excluded.n_errors,
    status        = max(status, excluded.status),
    root_name     = CASE WHEN excluded.root_start_ns IS NOT NULL
                          AND (root_start_ns IS NULL OR excluded.root_start_ns < root_start_ns)
                         THEN excluded.root_name ELSE root_name END,
    root_service  = CASE WHEN excluded.root_start_ns IS NOT NULL
                          AND (root_start_ns IS NULL OR excluded.root_start_ns < root_start_ns)
                         THEN excluded.root_service ELSE root_service END,
    root_start_ns = CASE WHEN excluded.root_start_ns IS NOT NULL
                          AND (root_start_ns IS NULL OR excluded.root_start_ns < root_start_ns)
                         THEN excluded.root_start_ns ELSE root_start_ns END,
    first_name    = CASE WHEN excluded.start_ns < start_ns THEN excluded.first_name ELSE first_name END,
    first_service = CASE WHEN excluded.start_ns < start_ns THEN excluded.first_service ELSE first_service END
"""
#: the same, answering the trace's start once merged (what operations.max_lag_ns is measured from)
TRACE_UPSERT_START = TRACE_UPSERT + "RETURNING start_ns"


def _set_aside_old_trace_ops(conn: sqlite3.Connection) -> Optional[str]:
    """Move a trace_ops table without start ranges (schema 1-7) aside; return its new name.

    Its rows are not copied: the new table is rebuilt from the chunks, which
    is where the ranges come from (``ops.rebuild``).
    """
    row = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'trace_ops'").fetchone()
    if row is None or "min_start_ns" in row[0]:
        return None
    conn.execute("DROP INDEX IF EXISTS trace_ops_trace")
    conn.execute("ALTER TABLE trace_ops RENAME TO trace_ops_old")
    return "trace_ops_old"


def _add_lag_column(conn: sqlite3.Connection) -> None:
    """``operations.max_lag_ns`` (schema 8) on an older table; ``ops.rebuild`` fills it."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(operations)")}
    if "max_lag_ns" not in columns:
        conn.execute("ALTER TABLE operations ADD COLUMN max_lag_ns INTEGER NOT NULL DEFAULT 0")


def migrate(conn: sqlite3.Connection, path: object) -> None:
    """Create or upgrade the tables (the caller holds a write transaction)."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise RuntimeError(
            f"{path}: store schema version {version} is newer than this gwtrace "
            f"understands ({SCHEMA_VERSION}); upgrade gwtrace or use another --db"
        )
    if version == SCHEMA_VERSION:
        return
    old_ops = _set_aside_old_trace_ops(conn)
    schemas = _SCHEMA + glideins.SCHEMA + glidein_parts.SCHEMA + live.SCHEMA
    for statement in schemas.split(";"):
        if statement.strip():
            conn.execute(statement)
    _add_lag_column(conn)
    if old_ops:
        conn.execute(f"DROP TABLE {old_ops}")
        ops.rebuild(conn)  # decodes every chunk once
    # A store brought to a new schema applies every registered part again (store.parts): their tables
    # and migrations (the summaries of a store of schema 4) follow the store's.
    conn.execute(parts.SCHEMA)
    conn.execute("DELETE FROM store_parts")
    # Version 1 had two indexes that cost every write and served only rare reads.
    conn.execute("DROP INDEX IF EXISTS traces_end")
    conn.execute("DROP INDEX IF EXISTS traces_sort")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
