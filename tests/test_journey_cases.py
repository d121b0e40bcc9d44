"""The journey right in the cases users hit (issue 30, part 3), from event logs in the order HTCondor writes
them: input transfers (040) before executing (001), schedd aliases, open intervals, sub-second steps, hold
reasons' own text, a cut-short 012."""

from __future__ import annotations

import io

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource

import journey_gen as gen
from gwtrace.export.otlp import to_readable_spans
from gwtrace.cli.job import main as job_main
from gwtrace.wire.span import SpanRecord
from gwtrace.store import TraceStore
from test_journey import T0, by_name, ingest, job

JOBSUB = "<131.225.240.11:9618?addrs=131.225.240.11-9618&alias=jobsub03.fnal.gov&noUDP&sock=schedd_2891_4f5a>"
WN = "<10.9.9.9:9618?addrs=10.9.9.9-9618&alias=wn1.example.org&noUDP&sock=slot1_1_2_3>"


def started_input(c, p, t):
    return gen.event(40, c, p, t, "Started transferring input files", [f"Transferring to host: {WN}"])


def finished_input(c, p, t):
    return gen.event(40, c, p, t, "Finished transferring input files")


def text_of(db, ident, now):
    out = io.StringIO()
    assert job_main([ident, "--store", str(db), "--now", str(now)], out) == 0
    return out.getvalue()


def test_input_transfers_logged_before_executing_belong_to_their_run(tmp_path):
    """000, 040 started/finished input, 001, 004 evicted, 040 input again, 001, 005: as HTCondor writes them
    (the transfer of 58123408.0's second run was filed under the first, ended run)."""
    log = tmp_path / "u.log"
    log.write_text(gen.submitted(58, 0, T0) + started_input(58, 0, T0 + 100) + finished_input(58, 0, T0 + 130)
                   + gen.executing(58, 0, T0 + 131) + gen.evicted(58, 0, T0 + 1000)
                   + started_input(58, 0, T0 + 1600) + finished_input(58, 0, T0 + 1960)
                   + gen.executing(58, 0, T0 + 1961, "slot1_2@glidein_5555_2@wn2.example.org")
                   + gen.event(40, 58, 0, T0 + 2500, "Started transferring output files")
                   + gen.event(40, 58, 0, T0 + 2502, "Finished transferring output files")
                   + gen.terminated(58, 0, T0 + 2503))
    db = tmp_path / "t.db"
    ingest(db, log)
    data = job(db, "58.0")
    runs = sorted(by_name(data, "executing"), key=lambda s: s["start"])
    transfers = {(s["name"], s["start"]): s for s in data["spans"] if s["name"].startswith("transfer")}
    assert [(n, t - T0) for n, t in sorted(transfers)] == [("transfer input", 100), ("transfer input", 1600),
                                                           ("transfer output", 2500)]
    first, second = transfers[("transfer input", T0 + 100)], transfers[("transfer input", T0 + 1600)]
    assert first["parent"] == runs[0]["span_id"] and first["duration_s"] == 30
    assert second["parent"] == runs[1]["span_id"] and second["duration_s"] == 360
    assert transfers[("transfer output", T0 + 2500)]["parent"] == runs[1]["span_id"]
    # each run's span covers its input transfer; the wait ends where the transfer begins
    assert (runs[0]["start"], runs[0]["end"]) == (T0 + 100, T0 + 1000)
    assert runs[1]["start"] == T0 + 1600
    idle = sorted((s["start"] - T0, s["end"] - T0) for s in by_name(data, "idle"))
    assert idle == [(0, 100), (1000, 1600)]


def test_an_input_transfer_no_execution_followed_is_a_note(tmp_path):
    log = tmp_path / "u.log"
    log.write_text(gen.submitted(59, 0, T0) + started_input(59, 0, T0 + 10)
                   + gen.held(59, 0, T0 + 70, "Transfer input files failure at execution point", 13, 2))
    db = tmp_path / "t.db"
    ingest(db, log)
    data = job(db, "59.0")
    assert not [s for s in data["spans"] if s["name"].startswith("transfer")]
    root = by_name(data, "htcondor.job")[0]
    assert [e["attributes"]["message"] for e in root["events"] if e["name"] == "note"] == [
        "input transfer for 60 s, then a hold before the job executed"]


def test_every_name_of_a_schedd_finds_the_job(tmp_path):
    """Stored under its submit event's address; the event's alias= and the GlobalJobId name it too."""
    log = tmp_path / "u.log"
    log.write_text(gen.submitted(58123404, 0, T0, host=JOBSUB) + gen.executing(58123404, 0, T0 + 60))
    db = tmp_path / "t.db"
    ingest(db, log)
    for ident in ("58123404.0@jobsub03.fnal.gov", "58123404.0@JOBSUB03", "58123404.0@131.225.240.11:9618",
                  f"jobsub03.fnal.gov#58123404.0#{T0}"):
        data = job(db, ident)
        assert data["job"]["id"] == "58123404.0" and data["job"]["schedd"] == "131.225.240.11:9618", ident
    assert data["job"]["schedd_aliases"] == ["jobsub03.fnal.gov"]
    # an ad naming the schedd by its GlobalJobId joins the same job (not a second one)
    ads = tmp_path / "ad"
    ads.write_text(f'ClusterId = 58123404\nProcId = 0\nGlobalJobId = "jobsub02.fnal.gov#58123404.0#{T0}"\n'
                   'Owner = "mu2epro"\n\n')
    log2 = tmp_path / "v.log"
    log2.write_text(gen.submitted(58123404, 0, T0, host=JOBSUB.replace("jobsub03", "jobsub02"))
                    + gen.executing(58123404, 0, T0 + 60))
    ingest(db, log2, ads=[ads])
    assert job(db, "58123404.0@jobsub02.fnal.gov")["job"]["owner"] == "mu2epro"
    from gwtrace.cli import main

    assert main(["job", "58123404.0@jobsub09.fnal.gov", "--store", str(db)]) == 1


def test_open_intervals_show_time_so_far(tmp_path):
    """Idle 6.5 h with one submit event: not "0 s (open)"; held likewise."""
    log = tmp_path / "u.log"
    log.write_text(gen.submitted(90, 0, T0))
    db = tmp_path / "t.db"
    ingest(db, log)
    text = text_of(db, "90.0", T0 + 23400)
    assert "state: idle since" in text and "(6 h 30 min)" in text
    assert "\n  idle  6 h 30 min so far (open)" in text and "0 s (open)" not in text
    log.write_text(gen.submitted(90, 0, T0) + gen.held(90, 0, T0 + 600, "via condor_hold (by user alice)", 1, 0))
    ingest(db, log)
    text = text_of(db, "90.0", T0 + 4200)
    assert "\n  held  60 min so far (open)  ERROR  [hold.code=1, hold.subcode=0, hold.label=UserRequest]" in text
    assert (job(db, "90.0", now=T0 + 4200)["spans"][-1]["elapsed_s"]) == 3600


def test_sub_second_steps_are_not_zero_seconds(tmp_path):
    log = tmp_path / "u.log"
    log.write_text(gen.submitted(91, 0, T0) + gen.executing(91, 0, T0 + 10) + gen.terminated(91, 0, T0 + 20))
    db = tmp_path / "t.db"
    ingest(db, log)
    trace = job(db, "91.0")["job"]["trace_id"]
    run = by_name(job(db, "91.0"), "executing")[0]
    step = SpanRecord(trace_id=trace, span_id="cccccccccccccccc", parent_id=run["span_id"], parent_remote=True,
                      flags=1, tracestate="", name="fix_config", start_us=(T0 + 11) * 10**6, pid=1,
                      end_us=(T0 + 11) * 10**6 + 250_000, attributes={"htcondor.job.id": "91.0"})
    with TraceStore(db) as store:
        store.ingest(encode_spans(to_readable_spans([step], Resource({"service.name": "user-job"}))))
    assert "\n    fix_config  250 ms" in text_of(db, "91.0", T0 + 100)


MEMORY_HOLD = ("Error from slot1_3@glidein_4242_1@wn1.example.org: Job has gone over cgroup memory limit of 2048 "
               "megabytes. Last measured usage: 2100 megabytes.  Consider resubmitting with a higher request_memory.")


def test_hold_reason_text_is_shown_and_the_measured_peak_quoted(tmp_path):
    log = tmp_path / "u.log"
    log.write_text(gen.submitted(92, 0, T0) + gen.executing(92, 0, T0 + 10)
                   + gen.held(92, 0, T0 + 600, MEMORY_HOLD, 34, 102))
    db = tmp_path / "t.db"
    ingest(db, log)
    text = text_of(db, "92.0", T0 + 700)
    assert f"hold reason: {MEMORY_HOLD}\n" in text
    assert f"hold.label=JobOutOfResources]  reason: {MEMORY_HOLD}" in text
    held = by_name(job(db, "92.0"), "held")[0]
    assert held["attributes"]["hold.suggestion"] == ("raise request_memory above the 2100 MB HTCondor measured "
                                                     "(e.g. request_memory = 2600), then resubmit")
    why = job(db, "92.0", "--why", now=T0 + 700)["why"]
    assert "2100 MB" in why["reasons"][0]["advice"]


def test_a_cut_short_012_is_no_hold_code_and_closes_when_the_job_completes(tmp_path):
    """A 012 without its "Code N Subcode M" line (the bindings give 0/0), then no 013: executing again and
    terminating end the hold."""
    log = tmp_path / "u.log"
    log.write_text(gen.submitted(93, 0, T0) + gen.event(12, 93, 0, T0 + 50, "Job was held.")
                   + gen.executing(93, 0, T0 + 400) + gen.terminated(93, 0, T0 + 500))
    db = tmp_path / "t.db"
    ingest(db, log)
    data = job(db, "93.0")
    (held,) = by_name(data, "held")
    assert "hold.code" not in held["attributes"] and held["attributes"]["hold.label"] == "unknown"
    assert not held["open"] and (held["start"], held["end"]) == (T0 + 50, T0 + 400)
    assert data["current"]["status"] == "completed"
    log.write_text(gen.submitted(94, 0, T0) + gen.event(12, 94, 0, T0 + 50, "Job was held.")
                   + gen.terminated(94, 0, T0 + 500))
    ingest(db, log)
    (held,) = by_name(job(db, "94.0"), "held")
    assert not held["open"] and held["end"] == T0 + 500


def test_ingest_without_the_bindings_is_one_clear_line(tmp_path, monkeypatch, capsys):
    """`make install` (no factory extra) then `gwtrace ingest --condor-log`: the command and the extra to
    install, never "internal error"."""
    import sys

    from gwtrace.cli import main

    for name in ("htcondor2", "htcondor"):
        monkeypatch.setitem(sys.modules, name, None)       # import fails as when not installed
    log = tmp_path / "u.log"
    log.write_text(gen.submitted(5, 0, T0))
    assert main(["ingest", "--condor-log", str(log), "--store", str(tmp_path / "t.db")]) == 1
    err = capsys.readouterr().err
    assert err == ("gwtrace: reading HTCondor job event logs (--condor-log) needs HTCondor's Python bindings, "
                   "not installed here: pip install 'gwtrace[factory]' (or the htcondor package alone)\n")
