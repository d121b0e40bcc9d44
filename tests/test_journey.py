"""The user job's journey: event logs -> spans, job lookup, hold explanations, --why (issue 13)."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import time
from pathlib import Path

import pytest

import journey_gen as gen
from gwtrace.cli import main as gwtrace_main
from gwtrace.journey import holds
from gwtrace.factory.eventlog import read_events
from gwtrace.journey.ingest import Totals, ingest_condor, ingest_log
from gwtrace.journey.spans import run_span_id
from gwtrace.journey.view import parse_job_id
from gwtrace.store import TraceStore

DATA = Path(__file__).resolve().parent / "data" / "journey"
T0 = 1_790_000_000


def ingest(db: Path, *logs: Path, ads=(), schedd=None) -> str:
    err = io.StringIO()
    assert ingest_condor([str(p) for p in logs], [str(a) for a in ads], schedd, str(db), err) == 0, err.getvalue()
    return err.getvalue()


def job(db: Path, *args: str, now: float = T0 + 10_000) -> dict:
    out = io.StringIO()
    from gwtrace.cli.job import main

    assert main([*args, "--store", str(db), "--format", "json", "--now", str(now)], out) == 0
    return json.loads(out.getvalue())


def by_name(data: dict, name: str) -> list:
    return [s for s in data["spans"] if s["name"] == name]


@pytest.fixture
def full(tmp_path):
    log = tmp_path / "user.log"
    log.write_text(gen.full_journey(77, 0, T0))
    db = tmp_path / "traces.db"
    ingest(db, log, schedd="submit.example.org")
    return db, log


def test_every_event_kind_maps_to_its_span(full):
    db, _ = full
    data = job(db, "77.0")
    root = by_name(data, "htcondor.job")[0]
    assert (root["start"], root["end"]) == (T0, T0 + 703)
    assert root["status"] == "error" and root["attributes"]["process.exit.code"] == 3
    assert [e["name"] for e in root["events"]] == ["submitted"]
    idle = sorted((s["start"] - T0, s["end"] - T0) for s in by_name(data, "idle"))
    assert idle == [(0, 100), (200, 300), (500, 600)]
    (hold,) = by_name(data, "held")
    assert (hold["start"] - T0, hold["end"] - T0) == (100, 200) and hold["status"] == "error"
    assert hold["attributes"]["hold.code"] == 34 and hold["attributes"]["hold.subcode"] == 102
    assert "request_memory" in hold["attributes"]["hold.suggestion"]
    assert [e["name"] for e in hold["events"]] == ["released"]
    runs = sorted(by_name(data, "executing"), key=lambda s: s["start"])
    assert [(r["start"] - T0, r["end"] - T0) for r in runs] == [(300, 500), (600, 703)]
    assert runs[0]["attributes"]["htcondor.run.end_reason"] == "evicted" and runs[0]["status"] == "error"
    assert [e["name"] for e in runs[0]["events"]] == ["evicted"]
    assert runs[0]["attributes"]["glidein.name"] == "glidein_4242_1"
    assert runs[0]["attributes"]["host.name"] == "wn1.example.org"
    assert runs[0]["attributes"]["htcondor.memory_usage_mb"] == 1500
    assert runs[1]["attributes"]["glidein.name"] == "glidein_5555_2"
    assert runs[1]["attributes"]["htcondor.run.end_reason"] == "terminated"
    (disc,) = by_name(data, "disconnected")
    assert (disc["start"] - T0, disc["end"] - T0, disc["parent"]) == (400, 430, runs[0]["span_id"])
    (tin,) = by_name(data, "transfer input")
    (tout,) = by_name(data, "transfer output")
    assert (tin["start"] - T0, tin["end"] - T0, tin["parent"]) == (301, 305, runs[0]["span_id"])
    assert (tout["start"] - T0, tout["end"] - T0, tout["parent"]) == (700, 702, runs[1]["span_id"])
    assert data["current"] == {"status": "completed", "since": T0 + 703, "for_s": 10_000 - 703, "exit": {"code": 3}}


def test_signal_abort_and_open_spans(tmp_path):
    log = tmp_path / "a.log"
    log.write_text(gen.submitted(5, 0, T0) + gen.executing(5, 0, T0 + 10) + gen.terminated(5, 0, T0 + 20, signal=9)
                   + gen.submitted(5, 1, T0) + gen.aborted(5, 1, T0 + 30) + gen.submitted(5, 2, T0)
                   + gen.executing(5, 2, T0 + 40))
    db = tmp_path / "t.db"
    ingest(db, log)
    killed = job(db, "5.0")
    assert killed["current"]["exit"] == {"signal": 9}
    assert by_name(killed, "htcondor.job")[0]["attributes"]["htcondor.exit_signal"] == 9
    removed = job(db, "5.1")
    assert removed["current"]["status"] == "removed" and "condor_rm" in removed["current"]["aborted"]
    running = job(db, "5.2")
    (run,) = by_name(running, "executing")
    assert run["open"] and running["current"]["status"] == "running"


def test_real_samples_legacy_timestamps(tmp_path):
    db = tmp_path / "t.db"
    out = ingest(db, DATA / "userlog_submit_execute_terminate.legacy.log", DATA / "userlog_submit_aborted.legacy.log",
                 DATA / "userlog_jobad_information_028.legacy.log")
    assert "ingested" in out and "skipped" not in out
    assert "(1 already folded or of kinds that make no span)" in out   # the 008 "phase: output" event
    data = job(db, "23515.0")
    (run,) = by_name(data, "executing")
    assert run["duration_s"] == 4 * 60 + 1   # 17:51:37 -> 17:55:38
    assert run["attributes"]["htcondor.memory_usage_mb"] == 1 and data["current"]["exit"] == {"code": 0}
    aborted = [s for s in TraceStore(db, create=False).reader().execute("SELECT status FROM jobs WHERE status = 'removed'")]
    assert len(aborted) == 6
    dag = job(db, "236467.0")   # 028 carries the job ad information
    assert dag["current"]["status"] == "idle"


def test_iso_and_legacy_give_the_same_times(tmp_path):
    iso, legacy = tmp_path / "iso.log", tmp_path / "legacy.log"
    iso.write_text(gen.event(0, 9, 0, T0, "Job submitted from host: <1.1.1.1:9618>") + gen.event(9, 9, 0, T0 + 5, "Job was aborted.", ["x"]))
    this_year = int(time.mktime(time.strptime(time.strftime("%Y") + "-03-01 10:00:00", "%Y-%m-%d %H:%M:%S")))
    legacy.write_text(gen.event(0, 9, 1, this_year, "Job submitted from host: <1.1.1.1:9618>", legacy=True))
    assert [e.time for e in read_events(str(iso)).events] == [T0, T0 + 5]
    assert [e.time for e in read_events(str(legacy)).events] == [this_year]


def test_idempotent_second_run_adds_nothing(full):
    db, log = full
    with TraceStore(db) as store:
        before = (store.span_count(), store.trace_count())
    out = ingest(db, log, schedd="submit.example.org")
    assert "ingested 0 job event(s) of 0 job(s) as 0 span(s)" in out
    # even with the offsets forgotten: the same ids, the store keeps one copy
    with TraceStore(db) as store:
        with store.transaction() as conn:
            conn.execute("DELETE FROM job_logs")
    ingest(db, log, schedd="submit.example.org")
    with TraceStore(db) as store:
        assert (store.span_count(), store.trace_count()) == before
    data = job(db, "77.0")
    assert len(by_name(data, "executing")) == 2 and len(by_name(data, "held")) == 1


def test_incremental_follow_of_a_growing_log(tmp_path):
    text = gen.full_journey(12, 0, T0)
    cut = text.index("001 (012")          # the log as it was when the job was about to run
    half = text[:cut] + text[cut:cut + 30]  # plus the first bytes of the execute event, being written
    log = tmp_path / "grow.log"
    log.write_text(half)
    db = tmp_path / "t.db"
    out = ingest(db, log, schedd="s")
    assert "unfinished last event" in out
    first = job(db, "12.0", now=T0 + 250)
    assert first["current"]["status"] == "idle" and by_name(first, "idle")[-1]["open"]
    log.write_text(text)                   # the rest arrives
    out = ingest(db, log, schedd="s")
    assert "ingested 11 job event(s) of 1 job(s)" in out
    grown, whole = job(db, "12.0"), None
    other = tmp_path / "whole.db"
    ingest(other, log, schedd="s")
    whole = job(other, "12.0")
    strip = lambda d: sorted((s["name"], s["span_id"], s["start"], s["end"], s["open"]) for s in d["spans"])  # noqa: E731
    assert strip(grown) == strip(whole)
    assert ingest(db, log, schedd="s").startswith("gwtrace: ingested 0 job event(s)")


def test_rotated_log_is_read_from_the_start(tmp_path):
    log = tmp_path / "r.log"
    log.write_text(gen.submitted(1, 0, T0) + gen.terminated(1, 0, T0 + 9))
    db = tmp_path / "t.db"
    ingest(db, log, schedd="s")
    log.write_text(gen.submitted(2, 0, T0 + 50))
    assert "ingested 1 job event(s)" in ingest(db, log, schedd="s")
    assert job(db, "2.0")["current"]["status"] == "idle"


def test_damaged_interleaved_and_unknown_events_are_skipped_and_counted(tmp_path):
    text = (gen.submitted(3, 0, T0) + gen.submitted(4, 0, T0 + 1)
            + gen.event(77, 3, 0, T0 + 2, "An event from a newer HTCondor", ["with a body"])
            + gen.executing(4, 0, T0 + 3) + "this line is not an event\n...\n"
            + gen.held(3, 0, T0 + 4, "Failed to transfer files", 13, 2)
            + gen.header(5, 4, 0, T0 + 5) + "Job terminated.\n\t(1) Normal termination (retu\n"   # cut short
            + gen.terminated(4, 0, T0 + 6, 0) + gen.event(99, 4, 0, T0 + 7, "another unknown one"))
    log = tmp_path / "bad.log"
    log.write_text(text)
    result = read_events(str(log))
    assert [(e.code, e.cluster) for e in result.events] == [(0, 3), (0, 4), (1, 4), (12, 3), (5, 4)]
    assert result.unknown == {77: 1, 99: 1} and result.bad == 2 and result.offset == len(text.encode())
    db = tmp_path / "t.db"
    out = ingest(db, log)
    assert "skipped 2 event(s) of codes the bindings do not know: 077 x1, 099 x1" in out
    assert "skipped 2 damaged region(s)" in out
    assert job(db, "4.0")["current"]["exit"] == {"code": 0}
    assert job(db, "3.0")["current"]["status"] == "held"


def test_same_job_in_two_logs_is_folded_once(tmp_path, full):
    db, log = full
    copy = tmp_path / "schedd_event.log"
    shutil.copy(log, copy)
    ingest(db, copy, schedd="submit.example.org")
    data = job(db, "77.0")
    assert len(by_name(data, "executing")) == 2 and len(by_name(data, "idle")) == 3


@pytest.mark.parametrize("code,sub,words", [
    (34, 102, "request_memory"), (34, 104, "request_disk"), (1, 0, "condor_release"), (13, 2, "transfer_input_files"),
    (26, 0, "limit"), (15, 0, "condor_release"), (22, 0, "log"), (45, 0, "site")])
def test_hold_codes_are_explained_with_a_suggestion(code, sub, words):
    what = holds.explain(code, sub)
    assert words in what["suggestion"] and what["meaning"] and what["label"] != "unknown"


def test_hold_subcodes_errno_plugin_and_unknown_codes():
    assert "No such file" in holds.explain(13, 2)["subcode_meaning"]
    assert "status 3" in holds.explain(12, 3 << 8)["subcode_meaning"]
    assert "timed out" in holds.explain(13, 62)["subcode_meaning"]
    assert "not in gwtrace's table" in holds.explain(999)["meaning"]
    assert holds.explain(None)["label"] == "unknown"
    documented = set(range(1, 28)) | set(range(32, 49))
    assert documented <= set(holds.CODES)


def test_a_file_that_is_no_event_log_is_one_clear_line(tmp_path, capsys):
    junk = tmp_path / "notes.txt"
    junk.write_text("hello\nworld\n")
    db = tmp_path / "t.db"
    assert gwtrace_main(["ingest", "--condor-log", str(junk), "--store", str(db)]) == 1
    err = capsys.readouterr().err
    assert f"{junk}: no HTCondor job event in this file" in err
    assert gwtrace_main(["ingest", "--condor-log", str(tmp_path / "missing.log"), "--store", str(db)]) == 1
    assert "missing.log" in capsys.readouterr().err


def test_junk_longer_than_a_scan_block_is_skipped(tmp_path, monkeypatch):
    from gwtrace.factory import eventlog

    monkeypatch.setattr(eventlog, "SCAN_BLOCK", 64)
    junk = "".join(f"garbage line {n} with no event header\n" for n in range(40)) + "...\n"
    text = gen.submitted(8, 0, T0) + junk + gen.executing(8, 0, T0 + 5) + junk + gen.terminated(8, 0, T0 + 9)
    log = tmp_path / "junk.log"
    log.write_text(text)
    result = read_events(str(log))
    assert [e.code for e in result.events] == [0, 1, 5]
    assert result.bad == 2 and result.offset == len(text)


def test_a_log_read_in_small_chunks_gives_the_same_journey(tmp_path, monkeypatch):
    from gwtrace.journey import ingest as ingest_module

    log = tmp_path / "two.log"
    log.write_text(gen.full_journey(21, 0, T0) + gen.full_journey(21, 1, T0 + 3))
    whole = tmp_path / "whole.db"
    ingest(whole, log, schedd="s")
    monkeypatch.setattr(ingest_module, "CHUNK_EVENTS", 3)
    chunked = tmp_path / "chunked.db"
    out = ingest(chunked, log, schedd="s")
    assert "ingested 28 job event(s)" in out
    strip = lambda d: sorted((s["name"], s["span_id"], s["start"], s["end"], s["open"], s["status"])  # noqa: E731
                             for s in d["spans"])
    for ident in ("21.0", "21.1"):
        assert strip(job(chunked, ident)) == strip(job(whole, ident))
    with TraceStore(whole) as a, TraceStore(chunked) as b:
        assert a.span_count() == b.span_count()


def test_over_long_events_are_skipped_wherever_they_are(tmp_path, monkeypatch):
    """Events over MAX_EVENT_BYTES (here made 2 KiB) are never read by the bindings: one between events, one
    across a scan block, one at the end without its end line (still being written, but too long already)."""
    from gwtrace.factory import eventlog

    monkeypatch.setattr(eventlog, "MAX_EVENT_BYTES", 2048)
    monkeypatch.setattr(eventlog, "SCAN_BLOCK", 1000)
    long_hold = gen.held(9, 0, T0 + 3, "y" * 5000, 34, 102)
    text = (gen.submitted(9, 0, T0) + long_hold + gen.executing(9, 0, T0 + 5) + gen.held(9, 0, T0 + 6, "z" * 3000, 1, 0)
            + gen.released(9, 0, T0 + 7))
    tail = gen.header(5, 9, 0, T0 + 9) + "Job terminated.\n" + "w" * 4000
    log = tmp_path / "long.log"
    log.write_text(text + tail)
    result = read_events(str(log))
    assert [e.code for e in result.events] == [0, 1, 13]
    starts = [len(gen.submitted(9, 0, T0)), text.index(gen.held(9, 0, T0 + 6, "z" * 3000, 1, 0)), len(text)]
    assert [at for at, _ in result.skipped] == starts
    assert result.skipped[0][1] == len(long_hold) and result.offset == len(text + tail)
