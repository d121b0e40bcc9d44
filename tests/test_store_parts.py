"""What other packages keep in the store, handed to it (``gwtrace.store.parts``), and the import rules.

The store imports no domain code: the factory, the analysis and the journeys
register their rules and tables, and a store applies each part once per version.
"""

from __future__ import annotations

import ast
import sqlite3
from pathlib import Path

import pytest

import gwtrace.analysis  # noqa: F401  (registers the summarizer)
import gwtrace.factory  # noqa: F401  (registers the glidein rules)
import gwtrace.journey  # noqa: F401  (registers the job tables)
from conftest import REPO
from gwtrace.store import TraceStore, parts


def test_the_domain_packages_register_what_the_store_keeps_for_them() -> None:
    from gwtrace.analysis.summary import VERSION
    from gwtrace.factory.from_trace import record_from_trace

    assert parts.rules(parts.GlideinRules).from_trace is record_from_trace
    assert parts.rules(parts.Summarizer).version == VERSION


def test_a_part_registered_after_a_store_opened_gets_its_tables_once_per_version(tmp_path: Path,
                                                                                monkeypatch) -> None:
    monkeypatch.setattr(parts, "_parts", dict(parts._parts))
    migrated = []
    with TraceStore(tmp_path / "t.db") as store:
        parts.register(parts.StorePart("probe", 1, "CREATE TABLE IF NOT EXISTS probe (x)", migrated.append))
        with store.transaction() as conn:
            conn.execute("INSERT INTO probe VALUES (1)")
        store.reader()
    assert len(migrated) == 1
    with TraceStore(tmp_path / "t.db") as store:
        store.reader()                         # the same version: nothing runs again
        assert len(migrated) == 1
        parts.register(parts.StorePart("probe", 2, "", migrated.append))
        store.reader()
    assert len(migrated) == 2
    conn = sqlite3.connect(tmp_path / "t.db")
    assert conn.execute("SELECT version FROM store_parts WHERE name = 'probe'").fetchone() == (2,)
    conn.close()


def test_rules_nobody_registered_are_one_line_naming_who_registers_them(monkeypatch) -> None:
    monkeypatch.setattr(parts, "_rules", {})
    with pytest.raises(parts.MissingPart, match="^the store needs GlideinRules, which gwtrace.factory registers"):
        parts.rules(parts.GlideinRules)
    with pytest.raises(TypeError, match="not a store part or rules: int"):
        parts.register(1)


def test_records_put_without_a_summarizer_are_summarised_when_one_is_registered(tmp_path: Path,
                                                                               monkeypatch) -> None:
    """A process that stores records without the analysis imported leaves their summaries to the next
    store use that has it (the summaries part is marked not applied)."""
    from gwtrace.factory.record import GlideinRecord

    record = GlideinRecord(cluster=7, proc=0, schedd="s", factory="f", site="S", entry="E", started=100,
                           ended=200, status="OK")
    summarizer = parts.rules(parts.Summarizer)
    with TraceStore(tmp_path / "t.db") as store:
        store.reader()
        monkeypatch.setattr(parts, "_rules", {k: v for k, v in parts._rules.items() if k is not parts.Summarizer})
        store.put_glidein_records([record])
        assert list(store.glidein_summaries(refresh=False)) == []
    monkeypatch.setattr(parts, "_rules", {**parts._rules, parts.Summarizer: summarizer})
    with TraceStore(tmp_path / "t.db") as store:
        assert len(list(store.glidein_summaries())) == 1


def private_imports_across_packages(source: Path) -> list:
    """``from gwtrace.<other package>... import _name`` anywhere in ``source``: a private name used
    outside its package (make it public in its home, or move it)."""
    found = []
    for path in sorted(source.rglob("*.py")):
        home = path.relative_to(source).parts[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gwtrace."):
                other = node.module.split(".")[1]
                found += [f"{path.relative_to(source)}:{node.lineno} {node.module}.{alias.name}"
                          for alias in node.names if alias.name.startswith("_") and other != home]
    return found


def test_no_private_name_is_imported_from_another_package(tmp_path: Path) -> None:
    assert private_imports_across_packages(REPO / "sidecar" / "gwtrace") == []
    probe = tmp_path / "journey" / "x.py"
    probe.parent.mkdir()
    probe.write_text("from gwtrace.factory.condorg_log import _bindings\nfrom gwtrace.journey.y import _ok\n")
    assert private_imports_across_packages(tmp_path) == ["journey/x.py:1 gwtrace.factory.condorg_log._bindings"]


def test_ingest_of_a_factory_keeps_each_record_s_summary_at_ingest(planted_factory, tmp_path: Path) -> None:
    """`gwtrace ingest --factory-logs` in a process of its own (nothing else imported, as from cron): the
    analysis summaries are stored with the records, so the first `gwtrace analyze` reads them ready
    instead of summarising the whole store first (the house pass's registration had lost them)."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, GWTRACE_HOME=str(tmp_path / "home"))
    for key in [k for k in env if k.startswith("OTEL_EXPORTER_OTLP")]:
        del env[key]
    done = subprocess.run([sys.executable, "-c", "import sys; from gwtrace.cli import main; sys.exit(main())",
                           "ingest", "--factory-logs", str(planted_factory[0])],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(tmp_path / "home" / "traces.db") as conn:
        records = conn.execute("SELECT count(*) FROM glideins").fetchone()[0]
        summaries = conn.execute("SELECT count(*) FROM glidein_summaries").fetchone()[0]
    assert records > 0 and summaries == records
