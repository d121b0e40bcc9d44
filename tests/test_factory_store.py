"""Glidein records kept in the store at ingest: every command over records says the same from the store
as from the factory's files."""

import json
import shutil
import sqlite3

import pytest

from conftest import demo_factory
import factory_gen as gen
from gwtrace.cli import main
from gwtrace.factory.canonical import CATEGORIES
from gwtrace.store import SCHEMA_VERSION, TraceStore

demo = demo_factory()

pytestmark = pytest.mark.skipif(not gen.samples_present(), reason="../shared/samples/glideinwms not found")

END = 1790000000


@pytest.fixture(scope="module")
def factory(tmp_path_factory):
    """The generated variants of the real samples (incomplete ones included) plus a demo factory."""
    root = tmp_path_factory.mktemp("factory")
    gen.factory_dir(root / "variants")
    glideins, _ = demo.generate(300, 4, demo.PLANTS, 2.0, END)
    demo.write_factory(root / "demo", glideins)
    return root


@pytest.fixture(scope="module")
def store(factory, tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    mp = pytest.MonkeyPatch()
    mp.setenv("GWTRACE_HOME", str(home))
    for key in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        mp.delenv(key, raising=False)
    assert main(["ingest", "--factory-logs", str(factory)]) == 0
    assert main(["ingest", "--factory-logs", str(factory)]) == 0  # again: replaces, never doubles
    yield home / "traces.db"
    mp.undo()


def _json(capsys, *argv):
    assert main(list(argv)) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def _by_key(records):
    return {(r["schedd"], r["cluster"], r["proc"]): {k: v for k, v in r.items() if k != "trace_id"} for r in records}


def test_the_store_holds_every_glidein_once_and_the_same_record(factory, store, capsys):
    from_files = _by_key(_json(capsys, "glideins", "--factory-logs", str(factory), "--format", "json"))
    from_store = _by_key(_json(capsys, "glideins", "--store", str(store), "--format", "json"))
    assert len(from_store) == len(from_files) > 300
    assert from_store == from_files


@pytest.mark.parametrize("filters", [["--site", "UCSD"], ["--entry", "OSG_US_MIT_ce1"], ["--frontend", "OSG-VO"],
                                     ["--frontend", "CMS-fe.main-token"], ["--since", str(END - 86400)],
                                     ["--until", str(END - 86400)], ["--site", "Nope"]])
def test_filters_mean_the_same_in_sql(factory, store, capsys, filters):
    files = _by_key(_json(capsys, "glideins", "--factory-logs", str(factory), "--format", "json", *filters))
    stored = _by_key(_json(capsys, "glideins", "--store", str(store), "--format", "json", *filters))
    assert stored == files


@pytest.mark.parametrize("bucket, by", [("1h", None), ("1d", "site"), ("1h", "entry"), ("1d", "frontend")])
def test_account_from_the_store_equals_account_from_the_files(factory, store, capsys, bucket, by):
    extra = ["--by", by] if by else []
    period = ["--since", str((END - 86400) // 3600 * 3600), "--until", str(END // 3600 * 3600)]
    files = _json(capsys, "account", "--factory-logs", str(factory), "--bucket", bucket, "--format", "json",
                  *extra, *period)
    stored = _json(capsys, "account", "--store", str(store), "--bucket", bucket, "--format", "json", *extra, *period)
    key = by or "bucket"
    assert len(stored["series"]) == len(files["series"]) > 0
    for mine, theirs in zip(sorted(stored["series"], key=lambda r: (r.get(key), r["bucket"])),
                            sorted(files["series"], key=lambda r: (r.get(key), r["bucket"]))):
        assert mine["bucket"] == theirs["bucket"]
        assert {c: mine[c] for c in CATEGORIES} == pytest.approx({c: theirs[c] for c in CATEGORIES}, abs=0.02)
    assert stored["glideinwms"]["groups"].keys() == files["glideinwms"]["groups"].keys()
    for group, totals in files["glideinwms"]["groups"].items():
        assert stored["glideinwms"]["groups"][group] == pytest.approx(totals)
    assert stored["figures"].keys() == files["figures"].keys()
    for group, figures in files["figures"].items():
        assert {k: v or 0 for k, v in stored["figures"][group].items()} == pytest.approx(
            {k: v or 0 for k, v in figures.items()}, abs=0.05)


def test_analyze_from_the_store_gives_the_same_hints(factory, store, capsys):
    files = _json(capsys, "analyze", "--factory-logs", str(factory), "--hints", "--format", "json")
    stored = _json(capsys, "analyze", "--store", str(store), "--hints", "--format", "json")
    assert [(h["kind"], h["scope"]) for h in stored["hints"]] == [(h["kind"], h["scope"]) for h in files["hints"]]
    assert len(stored["hints"]) == len(demo.PLANTS)


def test_purged_traces_take_their_records_along(factory, tmp_path, monkeypatch):
    monkeypatch.setenv("GWTRACE_HOME", str(tmp_path))
    for key in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(key, raising=False)
    assert main(["ingest", "--factory-logs", str(factory / "variants")]) == 0
    with TraceStore() as store:
        before = len(list(store.glidein_record_rows()))
        assert before > 5
        store.purge(now_ns=(END + 10 * 365 * 86400) * 10**9, older_than_days=1)
        assert list(store.glidein_record_rows()) == []
        assert store.glidein_series(3600) == {}


def test_a_version_3_store_gains_the_record_tables(tmp_path):
    path = tmp_path / "old.db"
    TraceStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE glideins")
    conn.execute("DROP TABLE glidein_hours")
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    conn.close()
    with TraceStore(path) as store:
        assert list(store.glidein_records()) == []
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 9
    conn.close()


def test_a_version_4_store_gains_the_summaries_and_analyses_the_same(factory, store, tmp_path, capsys):
    """Schema 4 kept no analysis summary: its rows are summarised from their records when read."""
    before = _json(capsys, "analyze", "--store", str(store), "--format", "json")
    old = tmp_path / "v4.db"
    shutil.copy(store, old)
    conn = sqlite3.connect(old)
    conn.execute("DROP TABLE glidein_summaries")
    conn.execute("PRAGMA user_version = 4")
    conn.commit()
    conn.close()
    assert _json(capsys, "analyze", "--store", str(old), "--format", "json") == before
    conn = sqlite3.connect(old)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


def test_no_store_yet_is_one_clear_line(tmp_path, capsys):
    assert main(["account", "--store", str(tmp_path / "none.db")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "none.db" in err[0]


def test_a_glidein_whose_files_changed_replaces_its_hours(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GWTRACE_HOME", str(tmp_path / "home"))
    for key in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(key, raising=False)
    root = tmp_path / "factory"
    gen.factory_dir(root)
    assert main(["ingest", "--factory-logs", str(root)]) == 0
    killed = next(root.rglob("job.9.0.out"))  # a hard-killed glidein: its .out ends early
    jobs = [gen.Job(100, 3600), gen.Job(200, 600, "signal", 9)]
    killed.write_text(gen.cms_out(jobs))      # ... and later the whole .out arrives
    capsys.readouterr()
    assert main(["ingest", "--factory-logs", str(root)]) == 0
    files = _json(capsys, "account", "--factory-logs", str(root), "--bucket", "1h", "--format", "json")
    stored = _json(capsys, "account", "--bucket", "1h", "--format", "json")
    assert [r["bucket"] for r in stored["series"]] == [r["bucket"] for r in files["series"]]
    for mine, theirs in zip(stored["series"], files["series"]):
        assert {c: mine[c] for c in CATEGORIES} == pytest.approx({c: theirs[c] for c in CATEGORIES}, abs=0.02)
