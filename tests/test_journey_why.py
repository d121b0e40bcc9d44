"""A job's lookup by every id form, its trace (TraceParent, the wrapper's parent, the glidein link), and
``gwtrace job --why`` rankings with their evidence (issue 13)."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource

import journey_gen as gen
from gwtrace.export.otlp import to_readable_spans
from gwtrace.factory.record import GlideinRecord
from gwtrace.factory.to_trace import glidein_trace_id, span_id
from gwtrace.cli.job import main as job_main
from gwtrace.journey.ingest import ingest_condor
from gwtrace.journey.spans import run_span_id
from gwtrace.wire.span import SpanRecord
from gwtrace.store import TraceStore
from test_journey import DATA, T0, by_name, ingest, job

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"
FACTORY_SCHEDD = "schedd_glideins2@factory.example.org"


def ad_text(cluster: int, proc: int, **extra) -> str:
    attrs = {"ClusterId": cluster, "ProcId": proc, "Owner": '"alice"', "QDate": T0,
             "GlobalJobId": f'"submit.example.org#{cluster}.{proc}#{T0}"', "RequestCpus": 1, "RequestMemory": 2000,
             "DESIRED_Sites": '"SiteA,SiteB"'}
    attrs.update(extra)
    return "".join(f"{k} = {v}\n" for k, v in attrs.items()) + "\n"


def glidein(cluster: int, site: str, started=None, condor_start=None, ended=None, failed=None, memory=8000):
    return GlideinRecord(cluster=cluster, proc=0, schedd=FACTORY_SCHEDD, factory="OSG", site=site, entry=f"E_{site}",
                         submitted=(started or T0) - 60, started=started, condor_start=condor_start, ended=ended,
                         status="ERROR" if failed else "OK", failed_script=failed, cpus=8, memory_mb=memory)


@pytest.fixture
def traced(tmp_path):
    """Job 77.0 (every event kind) with an ad: TraceParent, the glidein that matched it, NumShadowStarts."""
    log = tmp_path / "user.log"
    log.write_text(gen.full_journey(77, 0, T0))
    ads = tmp_path / "job.ad"
    ads.write_text(ad_text(77, 0, TraceParent=f'"00-{TRACE}-{PARENT}-01"', MATCH_EXP_JOB_GLIDEIN_Site='"SiteA"',
                           MATCH_EXP_JOB_GLIDEIN_Factory='"OSG"', MATCH_EXP_JOB_GLIDEIN_Schedd=f'"{FACTORY_SCHEDD}"',
                           MATCH_EXP_JOB_GLIDEIN_ClusterId='"4242"', MATCH_EXP_JOB_GLIDEIN_ProcId='"0"',
                           NumShadowStarts=2))
    db = tmp_path / "traces.db"
    with TraceStore(db) as store:
        store.put_glidein_records([glidein(4242, "SiteA", started=T0 + 550, condor_start=T0 + 590, ended=T0 + 900)])
    ingest(db, log, ads=[ads], schedd="submit.example.org")
    return db


@pytest.mark.parametrize("ident", ["77", "77.0", "77.0@submit.example.org", "77.0@submit",
                                   f"submit.example.org#77.0#{T0}", f"00-{TRACE}-{PARENT}-01", TRACE])
def test_lookup_by_every_id_form(traced, ident):
    data = job(traced, ident)
    assert data["job"]["id"] == "77.0" and data["job"]["trace_id"] == TRACE


def test_unknown_ids_are_one_clear_line(traced, capsys):
    from gwtrace.cli import main

    assert main(["job", "78.0", "--store", str(traced)]) == 1
    assert capsys.readouterr().err.strip() == f"gwtrace: no job 78.0 in the store {traced} " \
                                              "(ingest its event log with gwtrace ingest --condor-log)"
    assert main(["job", f"00-{'1' * 32}-{PARENT}-01", "--store", str(traced)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"gwtrace: no trace {'1' * 32} in the store {traced}"]
    assert main(["job", "77.0@", "--store", str(traced)]) == 1
    assert "not a job id" in capsys.readouterr().err


def test_traceparent_joins_the_trace_and_the_wrapper_nests_under_executing(traced):
    data = job(traced, "77.0")
    root = by_name(data, "htcondor.job")[0]
    assert root["parent"] == PARENT and data["job"]["traceparent"] == f"00-{TRACE}-{PARENT}-01"
    runs = sorted(by_name(data, "executing"), key=lambda s: s["start"])
    assert [r["span_id"] for r in runs] == [run_span_id(TRACE, 77, 0, 1), run_span_id(TRACE, 77, 0, 2)]
    # the job wrapper's span on the worker node (its parent derived the same way) and one inside the job
    wrapper = SpanRecord(trace_id=TRACE, span_id="aaaaaaaaaaaaaaa1", parent_id=run_span_id(TRACE, 77, 0, 2),
                         parent_remote=True, flags=1, tracestate="", name="user_job", start_us=(T0 + 610) * 10**6,
                         pid=1, end_us=(T0 + 690) * 10**6, attributes={"htcondor.job.id": "77.0"})
    step = SpanRecord(trace_id=TRACE, span_id="aaaaaaaaaaaaaaa2", parent_id="aaaaaaaaaaaaaaa1", parent_remote=False,
                      flags=1, tracestate="", name="analysis step", start_us=(T0 + 620) * 10**6, pid=1,
                      end_us=(T0 + 680) * 10**6)
    with TraceStore(traced) as store:
        store.ingest(encode_spans(to_readable_spans([wrapper, step], Resource({"service.name": "glidein"}))))
    data = job(traced, f"00-{TRACE}-{PARENT}-01")
    (user_job,) = by_name(data, "user_job")
    (inner,) = by_name(data, "analysis step")
    assert user_job["parent"] == runs[1]["span_id"] and inner["parent"] == user_job["span_id"]


def test_the_glidein_that_ran_it_is_linked(traced):
    data = job(traced, "77.0")
    last = max(by_name(data, "executing"), key=lambda s: s["start"])
    gtrace = glidein_trace_id("OSG", FACTORY_SCHEDD, "4242", "0")
    assert last["links"] == [{"trace_id": gtrace, "span_id": span_id(gtrace, "glidein"),
                              "attributes": {"gwtrace.link": "glidein that ran the job"}}]
    assert last["attributes"]["glidein.site"] == "SiteA" and last["attributes"]["glidein.name"] == "glidein_5555_2"
    assert last["glidein"] == {"trace_id": gtrace, "known": True, "site": "SiteA", "entry": "E_SiteA",
                               "submitted": T0 + 490, "started": T0 + 550, "validated": T0 + 590,
                               "ended": T0 + 900, "status": "OK", "failed_script": None}


def _job_ran_on_a_glidein_with_its_uuid(tmp_path, record_first: bool):
    log = tmp_path / "user.log"
    log.write_text(gen.full_journey(77, 0, T0))
    ads = tmp_path / "job.ad"
    ads.write_text(ad_text(77, 0, MATCH_EXP_JOB_GLIDEIN_Site='"SiteA"', MATCH_EXP_JOB_GLIDEIN_Factory='"OSG"',
                           MATCH_EXP_JOB_GLIDEIN_Schedd=f'"{FACTORY_SCHEDD}"', MATCH_EXP_JOB_GLIDEIN_ClusterId='"4242"',
                           MATCH_EXP_JOB_GLIDEIN_ProcId='"0"'))
    db = tmp_path / "traces.db"
    rec = glidein(4242, "SiteA", started=T0 + 550, condor_start=T0 + 590, ended=T0 + 900)
    rec.glidein_uuid = "uuid-4242"
    if not record_first:
        ingest(db, log, ads=[ads], schedd="submit.example.org")
    with TraceStore(db) as store:
        store.put_glidein_records([rec])
    if record_first:
        ingest(db, log, ads=[ads], schedd="submit.example.org")
    return db


@pytest.mark.parametrize("record_first", [True, False], ids=["glidein-stored-first", "job-ingested-first"])
def test_the_glidein_is_found_by_its_condorg_job_when_its_uuid_is_in_its_trace_id(tmp_path, record_first):
    """The job's ad names the glidein's Condor-G job, not its uuid (part of its trace id since issue 26):
    the stored glidein of that job running then is the one linked (at ingest) and shown."""
    db = _job_ran_on_a_glidein_with_its_uuid(tmp_path, record_first)
    mine = glidein_trace_id("OSG", FACTORY_SCHEDD, 4242, 0, "uuid-4242")
    data = job(db, "77.0")
    last = max(by_name(data, "executing"), key=lambda s: s["start"])
    assert last["glidein"]["trace_id"] == mine and last["glidein"]["known"] is True
    assert last["glidein"]["site"] == "SiteA"
    linked = last["links"][0]["trace_id"]
    assert linked == (mine if record_first else glidein_trace_id("OSG", FACTORY_SCHEDD, "4242", "0"))


def test_text_tree_shows_durations_state_and_glidein(traced):
    out = io.StringIO()
    assert job_main(["77.0", "--store", str(traced), "--now", str(T0 + 5000)], out) == 0
    text = out.getvalue()
    assert "state: completed since" in text and "exit code 3" in text
    assert "\n  held  100 s  ERROR  [hold.code=34, hold.subcode=102, hold.label=JobOutOfResources]" in text
    assert "\n    transfer input  4 s" in text and "glidein at SiteA" in text


def test_real_job_ad_alone_makes_an_idle_job_found_by_global_id(tmp_path):
    db = tmp_path / "t.db"
    ingest(db, ads=[DATA / "job_classad_long_form.ad"])
    data = job(db, "hcc-briantest.unl.edu#15.0#1357311627", now=1357311627 + 600)
    assert data["current"] == {"status": "idle", "since": 1357311627, "for_s": 600}
    assert data["job"]["owner"] == "bbockelm"
    assert job(db, "15.0@hcc-briantest.unl.edu")["job"]["global_id"] == "hcc-briantest.unl.edu#15.0#1357311627"


NOW = T0 + 3000


def _waiting_store(tmp_path, glideins, **extra):
    """Ten earlier jobs of alice that waited 100 s each, and job 90.0 idle since T0 (3000 s at NOW)."""
    log = tmp_path / "alice.log"
    text = ""
    for n in range(10):
        text += gen.submitted(50 + n, 0, T0 - 5000 + n) + gen.executing(50 + n, 0, T0 - 4900 + n) \
            + gen.terminated(50 + n, 0, T0 - 4000 + n)
    log.write_text(text + gen.submitted(90, 0, T0))
    ads = tmp_path / "ads"
    ads.write_text("".join(ad_text(50 + n, 0) for n in range(10))
                   + ad_text(90, 0, **extra))
    db = tmp_path / "t.db"
    with TraceStore(db) as store:
        store.put_glidein_records(glideins)
    ingest(db, log, ads=[ads], schedd="submit.example.org")
    return db


def _why(db, ident="90.0"):
    return job(db, ident, "--why", now=NOW)["why"]


def test_why_no_glidein_at_its_sites_with_failures_ranked_first(tmp_path):
    db = _waiting_store(tmp_path, [
        glidein(1, "SiteB", started=NOW - 5000, ended=NOW - 4000, failed="check_blacklist.sh"),
        glidein(2, "SiteB", started=NOW - 3000, ended=NOW - 2000, failed="check_blacklist.sh"),
        glidein(3, "SiteB", started=NOW - 3000, ended=NOW - 2500, failed="validate_node.sh"),
        glidein(4, "SiteA", started=NOW - 100),                       # validating
        glidein(5, "SiteC", started=NOW - 900, condor_start=NOW - 800),   # running, but not where the job may run
    ], LastRejMatchReason='"no match found"', LastRejMatchTime=NOW - 30)
    why = _why(db)
    titles = [r["title"] for r in why["reasons"]]
    assert titles == ["no glidein is running at SiteA, SiteB",
                      "3 glidein(s) at SiteA, SiteB failed in the last day",
                      "the negotiator could not match it last time",
                      "waiting longer than usual for jobs of alice",
                      "waiting longer than usual for jobs with the same requests",
                      "1 glidein(s) at SiteA, SiteB are still validating"]
    first, failures = why["reasons"][0], why["reasons"][1]
    assert first["evidence"] == ["SiteA: 0 running, 1 validating, 0 queued, 0 failed in the last day",
                                 "SiteB: 0 running, 0 validating, 0 queued, 3 failed in the last day",
                                 "no glidein has run this job yet (no execute event)"]
    assert failures["evidence"] == ["2 at check_blacklist.sh", "1 at validate_node.sh"]
    assert why["reasons"][2]["evidence"][0] == "LastRejMatchReason: no match found"
    assert why["reasons"][3]["evidence"] == ["waiting 50 min; median wait of 10 job(s) of alice: 100 s"]
    assert [r["rank"] for r in why["reasons"]] == [1, 2, 3, 4, 5, 6]
    assert why["missing"] == ["no glidein record shows a glidein at SiteA, SiteB whose HTCondor ran in the last day: "
                              "the job's requests could not be compared with what glideins offer"]
    assert why["current"]["status"] == "idle"


def test_why_running_glideins_too_small(tmp_path):
    db = _waiting_store(tmp_path, [glidein(n, "SiteA", started=NOW - 900, condor_start=NOW - 800, memory=1000)
                                   for n in range(3)], RequestMemory=4000)
    reasons = _why(db)["reasons"]
    top = reasons[0]   # said once, from the ClassAd comparison (issue 30), not again as "none is big enough"
    assert top["title"] == "no glidein at SiteA, SiteB offered 4000 MB of memory in the last day"
    assert "request_memory = 1000" in top["advice"]
    assert not any(r["title"].startswith("none of the") for r in reasons)


def test_why_running_glideins_that_fit_but_did_not_match(tmp_path):
    db = _waiting_store(tmp_path, [glidein(1, "SiteA", started=NOW - 900, condor_start=NOW - 800)])
    top = _why(db)["reasons"][0]
    assert top["title"] == "1 glidein(s) are running at SiteA, SiteB (1 with enough cpus and memory) but none has run this job"
    assert top["evidence"][-1] == "no glidein has run this job yet (no execute event)"


def test_why_held_explains_the_code_first(traced, tmp_path):
    log = tmp_path / "h.log"
    log.write_text(gen.submitted(60, 0, T0) + gen.executing(60, 0, T0 + 10)
                   + gen.held(60, 0, T0 + 20, "Job has gone over memory limit of 2048 megabytes.", 34, 102))
    ingest(traced, log, schedd="submit.example.org")
    why = job(traced, "60.0", "--why", now=T0 + 620)["why"]
    (reason,) = why["reasons"]
    assert reason["title"] == "held: the job used more memory than it had been given"
    assert reason["evidence"][:2] == ["held for 10 min, hold code 34 subcode 102 (JobOutOfResources), since "
                                      + time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(T0 + 20)),
                                      "HTCondor's reason: Job has gone over memory limit of 2048 megabytes."]
    assert "request_memory" in reason["advice"]


def test_why_says_what_evidence_is_missing(tmp_path):
    log = tmp_path / "lone.log"
    log.write_text(gen.submitted(5, 0, T0))
    db = tmp_path / "t.db"
    ingest(db, log)
    why = _why(db, "5.0")
    assert why["reasons"] == []
    assert why["missing"] == [
        "the job's owner is unknown (no job ad): no comparison with the owner's other jobs",
        "the job's requests (request_cpus/memory, DESIRED_Sites) are unknown: give the output of "
        "`condor_q -l 5.0` (or condor_history -l) with gwtrace ingest --job-ads",
        "the job's ad has no DESIRED_Sites: glideins are counted at every site",
        "the store holds no glidein records (gwtrace ingest --factory-logs, or traced glideins)",
        "no LastRejMatchReason in the job's ad (the negotiator's last word on it): give the output of "
        "`condor_q -l 5.0` with gwtrace ingest --job-ads"]
    out = io.StringIO()
    assert job_main(["5.0", "--why", "--store", str(db), "--now", str(NOW)], out) == 0
    assert "why: nothing to say (see missing evidence)\nmissing evidence:\n    - the job's owner is unknown" in out.getvalue()


def test_why_for_a_job_that_is_not_waiting(traced):
    why = job(traced, "77.0", "--why")["why"]
    assert [r["title"] for r in why["reasons"]] == ["the job is not waiting: it is completed"]


def test_a_wrapper_span_whose_run_number_drifted_goes_under_the_run_that_covered_it(traced):
    # the wrapper said run 2 (its NumShadowStarts ran ahead) while it ran during run 1; another one names a
    # run that does not exist
    spans = [SpanRecord(trace_id=TRACE, span_id=f"bbbbbbbbbbbbbbb{i}", parent_id=parent, parent_remote=True, flags=1,
                        tracestate="", name=f"user_job {i}", start_us=(T0 + start) * 10**6, pid=1,
                        end_us=(T0 + start + 5) * 10**6, attributes={"htcondor.job.id": "77.0"})
             for i, (parent, start) in enumerate([(run_span_id(TRACE, 77, 0, 2), 320),
                                                   (run_span_id(TRACE, 77, 0, 9), 650)], 1)]
    with TraceStore(traced) as store:
        store.ingest(encode_spans(to_readable_spans(spans, Resource({"service.name": "glidein"}))))
    data = job(traced, "77.0")
    parents = {s["name"]: s["parent"] for s in data["spans"]}
    assert parents["user_job 1"] == run_span_id(TRACE, 77, 0, 1)
    assert parents["user_job 2"] == run_span_id(TRACE, 77, 0, 2)


def test_traceparent_from_a_job_ad_information_event(tmp_path):
    """028 events (job_ad_information_attrs = TraceParent, ...) carry the ad's attributes in the log itself."""
    log = tmp_path / "u.log"
    body = (gen.header(28, 31, 0, T0) + "Job ad information event triggered.\n"
            f'TraceParent = "00-{TRACE}-{PARENT}-01"\nOwner = "bob"\nDESIRED_Sites = "SiteA"\n'
            "Cluster = 31\nProc = 0\nEventTypeNumber = 28\n...\n")
    log.write_text(gen.submitted(31, 0, T0) + body + gen.executing(31, 0, T0 + 60))
    db = tmp_path / "t.db"
    ingest(db, log)
    data = job(db, f"00-{TRACE}-{PARENT}-01")
    assert data["job"]["id"] == "31.0" and data["job"]["owner"] == "bob"
    assert by_name(data, "htcondor.job")[0]["parent"] == PARENT
    assert by_name(data, "executing")[0]["span_id"] == run_span_id(TRACE, 31, 0, 1)
    with TraceStore(db) as store:   # no span was written under another trace first
        assert store.trace_count() == 1


def test_missing_store_is_one_clear_line(tmp_path, capsys):
    from gwtrace.cli import main

    assert main(["job", "1.0", "--store", str(tmp_path / "none.db")]) == 1
    assert capsys.readouterr().err.strip() == (f"gwtrace: no store at {tmp_path / 'none.db'} yet: `gwtrace ingest` "
                                               "or `gwtrace serve` makes it (run one first), or give the path of one")


def test_traced_glideins_count_too(tmp_path):
    """A glidein known only from its own spans (no factory files) gets its record at the next read:
    --why sees its failure."""
    import random

    import synthetic

    db = tmp_path / "t.db"
    with TraceStore(db) as store:
        store.ingest(synthetic.glidein_trace(random.Random(4), T0 * 10**9, fail=True, uuid="g-2", site="CERN"))
    log, ads = tmp_path / "u.log", tmp_path / "u.ad"
    log.write_text(gen.submitted(70, 0, T0))
    ads.write_text(ad_text(70, 0, DESIRED_Sites='"CERN"'))
    ingest(db, log, ads=[ads], schedd="submit.example.org")
    titles = [r["title"] for r in _why(db, "70.0")["reasons"]]
    assert "no glidein is running at CERN" in titles and "1 glidein(s) at CERN failed in the last day" in titles
