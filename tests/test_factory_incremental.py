"""Backfill at scale (issue 29): streaming batches, incremental re-runs, Condor-G states, bad directories."""

import io
import json
import os
import time

import pytest

import factory_gen as gen
from gwtrace.cli import main
from gwtrace.factory import backfill as backfill_mod
from gwtrace.factory.backfill import backfill
from gwtrace.cli.now import main as now_main
from gwtrace.store import TraceStore

pytestmark = pytest.mark.skipif(not gen.samples_present(), reason="../shared/samples/glideinwms not found")


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("GWTRACE_HOME", str(tmp_path / "home"))
    for key in list(os.environ):
        if key.startswith("OTEL_EXPORTER_OTLP"):
            monkeypatch.delenv(key)
    return tmp_path / "home"


@pytest.fixture
def factory(tmp_path):
    root = tmp_path / "factory"
    gen.factory_dir(root)
    return root


@pytest.fixture
def parsed(monkeypatch):
    """The files the backfill parses, in order."""
    files = []
    real_read = backfill_mod._read

    def counting(path, errors):
        files.append(os.path.basename(path))
        return real_read(path, errors)

    monkeypatch.setattr(backfill_mod, "_read", counting)
    return files


def test_a_rerun_over_unchanged_logs_parses_no_file_and_a_grown_out_is_read_again(factory, home, parsed, capsys):
    assert main(["ingest", "--factory-logs", str(factory)]) == 0
    first = len(parsed)
    assert first == 23                                  # 13 glideins: 11 .out/.err pairs and one .out alone
    with TraceStore() as store:
        spans = store.span_count()
    parsed.clear()
    capsys.readouterr()
    assert main(["ingest", "--factory-logs", str(factory)]) == 0
    assert parsed == []
    err = capsys.readouterr().err
    assert "backfilled 0 glidein(s)" in err and "23 unchanged since the last run" in err
    with TraceStore() as store:
        [before] = [r for r in store.glidein_records() if r["cluster"] == 12]
    # the .out of glidein 12 was empty (written back late): now it is complete, and only its pair is read
    entry = next(factory.rglob("job.12.0.out")).parent
    (entry / "job.12.0.out").write_text(gen.cms_out([gen.Job(100, 3600)]))
    assert main(["ingest", "--factory-logs", str(factory)]) == 0
    assert sorted(parsed) == ["job.12.0.err", "job.12.0.out"]
    with TraceStore() as store:
        [after] = [r for r in store.glidein_records() if r["cluster"] == 12]
        assert store.span_count() > spans
    assert (len(before["jobs"]), len(after["jobs"])) == (0, 1)


def test_a_file_replaced_under_its_name_is_a_new_file(factory, home, parsed):
    assert main(["ingest", "--factory-logs", str(factory)]) == 0
    parsed.clear()
    out = next(factory.rglob("job.3.0.out"))
    text = out.read_text()
    stat = out.stat()
    fresh = out.with_name("job.3.0.out.tmp")
    fresh.write_text(text)                            # same size, same content, same times, another inode,
    os.utime(fresh, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    fresh.rename(out)                                 # renamed over it, as a file transfer does
    assert out.stat().st_ino != stat.st_ino
    assert main(["ingest", "--factory-logs", str(factory)]) == 0
    assert sorted(parsed) == ["job.3.0.err", "job.3.0.out"]


def test_records_are_stored_a_batch_at_a_time(factory, home, monkeypatch, tmp_path):
    """Nothing holds every record: each batch is in the store (committed) before the next is made."""
    monkeypatch.setattr(backfill_mod, "BATCH", 4)
    path = tmp_path / "batches.db"
    seen_before = []
    with TraceStore(path) as store:
        def keep(records):
            with TraceStore(path, create=False) as other:     # another connection: sees only what is committed
                seen_before.append(sum(1 for _ in other.glidein_records()))
            assert len(records) <= 4
            return store.put_glidein_records(records)

        totals = backfill([str(factory)], store.ingest, io.StringIO(), keep, store)
    assert seen_before == [0, 4, 8, 12]
    assert totals.batches == 4 and totals.glideins == 13


def test_the_condorg_log_is_followed_by_offset_and_its_states_kept(tmp_path, home, capsys):
    """Real event-log shapes (ISO times, the Condor-G hold body GlideinWMS sees): idle, running, held with its
    reason and code, released, removed, completed; appended events are read alone, the states move on."""
    entry = tmp_path / "factory" / "client" / "user_fe" / "glidein_gfactory_instance" / "entry_T2_US_MIT_ce1"
    entry.mkdir(parents=True)
    now = int(time.time())
    log = entry / "condor_activity_20261128_CMSG-v1_0.main.log"
    held = ("Job was held.\n\tError from slot1@ce01.cmsaf.mit.edu: Failed to start job: the CE is"
            " full\n\tCode 34 Subcode 0\n")
    events = [(0, c, 0, now - 3000) for c in (1, 2, 3, 4, 5)] + [(27, c, 0, now - 2990) for c in (1, 2, 3, 4, 5)] \
        + [(1, c, 0, now - 2000) for c in (2, 3, 5)] + [(12, 3, 0, now - 1000), (12, 4, 0, now - 900)] \
        + [(5, 5, 0, now - 500)]
    text = gen.event_log(events)
    text = text.replace(gen.EVENT_BODIES[12], held)
    log.write_text(text)
    assert main(["ingest", "--factory-logs", str(tmp_path / "factory")]) == 0
    assert "16 new Condor-G event(s)" in capsys.readouterr().err
    out = io.StringIO()
    assert now_main(["--format", "json"], out=out) == 0
    [cell] = json.loads(out.getvalue())["factory"]["entries"]
    assert (cell["entry"], cell["idle"], cell["running"], cell["held"]) == ("T2_US_MIT_ce1", 1, 1, 2)
    [reason] = cell["held_reasons"]
    assert reason["glideins"] == 2 and reason["code"] == 34 and "the CE is full" in reason["reason"]
    # the factory releases 3 and removes 4: only the two new events are read
    with open(log, "a") as handle:
        handle.write(gen.event_log([(13, 3, 0, now - 100), (9, 4, 0, now - 90)]))
    assert main(["ingest", "--factory-logs", str(tmp_path / "factory")]) == 0
    assert "2 new Condor-G event(s)" in capsys.readouterr().err
    out = io.StringIO()
    assert now_main(["--format", "json"], out=out) == 0
    [cell] = json.loads(out.getvalue())["factory"]["entries"]
    assert (cell["idle"], cell["running"], cell["held"], cell["held_reasons"]) == (2, 1, 0, [])
    table = io.StringIO()
    assert now_main([], out=table) == 0
    assert "factory (Condor-G logs): 2 idle, 1 running, 0 held" in table.getvalue()
    with TraceStore() as store:
        removed = [r for r in store.glidein_records() if r["cluster"] == 4]
        history = __import__("gwtrace.live.now", fromlist=["x"]).factory_history(store, now, 2, 600)
    assert removed and removed[0]["incomplete"]
    points = history["entries"]["T2_US_MIT_ce1"]
    assert max(p["held"] for p in points) == 2 and points[-1]["held"] == 0


@pytest.mark.parametrize("make", ["missing", "empty", "no glidein file"])
def test_a_directory_without_glideins_is_one_line_and_a_failure(tmp_path, home, capsys, make):
    target = tmp_path / "logs"
    if make != "missing":
        target.mkdir()
    if make == "no glidein file":
        (target / "entry_X").mkdir()
        (target / "entry_X" / "README").write_text("not a glidein\n")
    assert main(["ingest", "--factory-logs", str(target)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(target) in err[0] and "backfilled" not in err[0]


def test_a_site_failing_all_along_is_not_green_from_backfilled_records(tmp_path, home):
    """Site lights read the backfilled records: a site losing 44% of its glideins every day is amber."""
    from gwtrace.factory.record import GlideinRecord

    now = time.time()
    recs = [GlideinRecord(factory="f", schedd="s", cluster=i, proc=0, site="MIT", entry="MIT_ce1",
                          started=int(now - 86400 - i * 600 - 3600), ended=int(now - 86400 - i * 600),
                          status="ERROR" if i % 25 < 11 else "OK") for i in range(100)]
    with TraceStore() as store:
        store.put_glidein_records(recs)
    out = io.StringIO()
    assert now_main([], out=out) == 0
    [line] = [line for line in out.getvalue().splitlines() if "MIT" in line and "failed" in line]
    assert line.strip().startswith("AMBER MIT:")
    assert "44/100 glideins failed over the last 7.0 days (44%" in line


def test_watch_makes_the_records_of_untraced_glideins_as_their_files_settle(factory, home, capsys):
    """``ingest --watch`` backfills too: records and Condor-G states, for glideins that ran no gwtrace; a file
    still being written (younger than --settle) waits for a later scan."""
    old = time.time() - 120
    for path in factory.rglob("*"):
        os.utime(path, (old, old))                              # written back two minutes ago: settled
    young = next(factory.rglob("job.2.0.out"))
    os.utime(young, (time.time(), time.time()))                 # still being written
    assert main(["ingest", "--watch", str(factory), "--once", "--settle", "60"]) == 0
    assert "backfilled 12 glidein(s)" in capsys.readouterr().err
    with TraceStore() as store:
        assert sorted(r["cluster"] for r in store.glidein_records()) == [1] + list(range(3, 14))
    os.utime(young, (old, old))
    assert main(["ingest", "--watch", str(factory), "--once", "--settle", "60"]) == 0
    assert "backfilled 1 glidein(s)" in capsys.readouterr().err
    with TraceStore() as store:
        assert sorted(r["cluster"] for r in store.glidein_records()) == list(range(1, 14))
    assert main(["ingest", "--watch", str(factory), "--once", "--settle", "60"]) == 0
    assert "backfilled" not in capsys.readouterr().err          # nothing new: nothing to say


def test_site_lights_read_a_covering_index_that_an_older_store_gains_at_its_backfill(factory, home):
    """/now over 100 000 backfilled glideins read every record for the lights (7 s): now an index alone."""
    with TraceStore() as store:
        with store.transaction() as conn:
            conn.execute("DROP INDEX glideins_outcome")          # a store made before the index
    assert main(["ingest", "--factory-logs", str(factory)]) == 0
    with TraceStore() as store:
        plan = " ".join(str(row) for row in store.reader().execute(
            "EXPLAIN QUERY PLAN SELECT site, ended, status FROM glideins WHERE ended IS NOT NULL AND ended >= ?"
            " AND ended < ?", (0, 1)))
        assert "COVERING INDEX glideins_outcome" in plan
        assert sorted(store.glidein_outcomes(0, 2**40), key=repr) == sorted(
            ((r["site"], r["ended"], r["status"]) for r in store.glidein_records() if r["ended"] is not None), key=repr)


def test_to_an_otlp_endpoint_the_backfill_keeps_its_book_in_a_file_of_its_own(factory, home, tmp_path):
    """No store to keep what was read: a private SQLite file per destination, and the second run sends nothing."""
    from gwtrace.factory.seen import SideBook

    path = home / "backfill-test.db"
    sent = []
    for run in range(2):
        book = SideBook(path)
        try:
            totals = backfill([str(factory)], sent.append, io.StringIO(), None, book)
        finally:
            book.close()
        assert (totals.files_read, len(sent)) == ((23, 1) if run == 0 else (0, 1))
    assert path.stat().st_mode & 0o777 == 0o600


def test_an_entry_with_nothing_open_is_listed_with_zeros(factory, home):
    """The demo's glideins all ended: the factory's table lists the entry (0/0/0), not "nothing backfilled"."""
    from gwtrace.factory import states

    assert main(["ingest", "--factory-logs", str(factory)]) == 0
    with TraceStore() as store:
        last = store.reader().execute("SELECT max(since) FROM glidein_jobs").fetchone()[0]
        [cell] = states.now_by_entry(store.reader(), last + 60)
    assert (cell["entry"], cell["idle"], cell["running"], cell["held"]) == ("CMSHTPC_T2_AT_Vienna_ce-1", 0, 0, 0)
