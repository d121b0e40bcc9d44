"""``gwtrace job ID --why`` for an idle job: its requests and Requirements, evaluated with HTCondor's ClassAd
bindings against what the glideins seen at its sites offered in the last day (issue 30, part 2)."""

from __future__ import annotations

import io
import re

import journey_gen as gen
from gwtrace.journey import match
from gwtrace.cli.job import main as job_main
from gwtrace.journey.ads import read_ads
from gwtrace.store import TraceStore
from test_journey import DATA, T0, ingest, job
from test_journey_why import ad_text, glidein

NOW = T0 + 23400            # the job: idle 6.5 h


def _store(tmp_path, glideins, **extra):
    """Job 90.0 submitted at T0 (HTCondor's order: 000 only, idle), its ad as `condor_q -l` gives it."""
    log = tmp_path / "u.log"
    log.write_text(gen.submitted(90, 0, T0))
    ads = tmp_path / "ads"
    ads.write_text(ad_text(90, 0, **extra))
    db = tmp_path / "t.db"
    with TraceStore(db) as store:
        store.put_glidein_records(glideins)
    ingest(db, log, ads=[ads], schedd="submit.example.org")
    return db


def _why(db):
    return job(db, "90.0", "--why", now=NOW)["why"]


def _text(db):
    out = io.StringIO()
    assert job_main(["90.0", "--why", "--store", str(db), "--now", str(NOW)], out) == 0
    return out.getvalue()


def _offered(n, site="SiteA", memory=16000, cpus=8, gpus=0, ended=None, walltime=None, started=NOW - 7200):
    rec = glidein(n, site, started=started, condor_start=started + 60, ended=ended, memory=memory)
    rec.cpus, rec.gpus, rec.max_walltime = cpus, gpus, walltime
    return rec


def test_memory_no_glidein_offered_is_named_with_what_to_change(tmp_path):
    """The issue's case: RequestCpus=8, RequestMemory=64000, idle 6.5 h; glideins there offered 16 GB."""
    db = _store(tmp_path, [_offered(1), _offered(2, memory=12000), _offered(3, site="SiteB", ended=NOW - 600)],
                RequestCpus=8, RequestMemory=64000, LastRejMatchReason='"no match found"',
                LastRejMatchTime=NOW - 300,
                Requirements='(TARGET.Memory >= RequestMemory) && (TARGET.Cpus >= RequestCpus) '
                             '&& stringListMember(TARGET.GLIDEIN_Site, DESIRED_Sites)')
    why = _why(db)
    top = why["reasons"][0]
    assert top["title"] == "no glidein at SiteA, SiteB offered 64000 MB of memory in the last day"
    assert top["evidence"] == ["the job asks for 64000 MB of memory (request_memory); the largest of the "
                               "3 glidein(s) seen at SiteA, SiteB in the last day offered 16000 MB"]
    assert top["advice"].startswith("ask for at most 16000 (set request_memory = 16000 in the submit file)")
    # cpus fit (8 offered), the site clause is true: only memory is blamed; not again as "none big enough"
    titles = [r["title"] for r in why["reasons"]]
    assert not any("CPU" in t or "requirement" in t or t.startswith("none of the") for t in titles)
    rej = next(r for r in why["reasons"] if r["title"] == "the negotiator could not match it last time")
    assert rej["evidence"] == ["LastRejMatchReason: no match found",
                               "at " + time_text(NOW - 300) + " (5 min ago)"]
    text = _text(db)
    assert not re.search(r"\b1[0-9]{9}\b", text.split("why (most likely first)")[1]), "a raw epoch"
    assert "what to do: ask for at most 16000" in text


def time_text(epoch):
    from datetime import datetime, timezone

    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def test_a_requirement_clause_false_everywhere_and_one_the_records_cannot_check(tmp_path):
    db = _store(tmp_path, [_offered(1), _offered(2)],
                Requirements='(TARGET.Arch == "X86_64") && (TARGET.GPUs >= 1) && (TARGET.Memory >= RequestMemory)')
    why = _why(db)
    top = why["reasons"][0]
    assert top["title"] == "no glidein at SiteA, SiteB satisfies its requirement `TARGET.GPUs >= 1`"
    assert top["evidence"] == ["false on 2 of the 2 glidein(s) seen at SiteA, SiteB in the last day"]
    assert any(m.startswith('its requirement `TARGET.Arch == "X86_64"` uses attributes the glidein records do not '
                            "have (undefined on all 2): `condor_q -better-analyze 90.0` checks it")
               for m in why["missing"])


def test_gpus_and_cpus(tmp_path):
    db = _store(tmp_path, [_offered(1, cpus=4)], RequestCpus=16, RequestGpus=1)
    titles = [r["title"] for r in _why(db)["reasons"]]
    assert titles[:2] == ["no glidein at SiteA, SiteB offered 16 CPU(s) in the last day",
                          "no glidein at SiteA, SiteB offered 1 GPU(s) in the last day"]


def test_lifetime_left_vs_the_jobs_wall_time(tmp_path):
    """GLIDEIN_Max_Walltime 171000 s (as in the real glidein's config): started 40 h ago, 7 h 30 min left."""
    db = _store(tmp_path, [_offered(1, walltime=171000, started=NOW - 144000)], MaxWallTimeMins=1800)
    top = _why(db)["reasons"][0]
    assert top["title"] == "no glidein alive at SiteA, SiteB has 30 h 00 min of lifetime left"
    assert top["evidence"] == ["the job expects to run 30 h 00 min (MaxWallTimeMins); the 1 glidein(s) alive at "
                               "SiteA, SiteB now have at most 7 h 30 min of lifetime left (started + "
                               "GLIDEIN_Max_Walltime)"]
    # without a known GLIDEIN_Max_Walltime it is said to be missing, never guessed
    db2 = _store(tmp_path / "x", [_offered(1)], MaxWallTimeMins=1800) if (tmp_path / "x").mkdir() is None else None
    assert any("GLIDEIN_Max_Walltime" in m for m in _why(db2)["missing"])


def test_glideins_seen_more_than_a_day_ago_do_not_count(tmp_path):
    db = _store(tmp_path, [_offered(1, memory=100000, started=NOW - 200000, ended=NOW - 90000)],
                RequestMemory=64000)
    why = _why(db)
    assert not any("offered" in r["title"] for r in why["reasons"])
    assert "no glidein record shows a glidein at SiteA, SiteB whose HTCondor ran in the last day: the job's " \
           "requests could not be compared with what glideins offer" in why["missing"]


def test_missing_ad_evidence_names_condor_q_and_job_ads(tmp_path):
    log = tmp_path / "lone.log"
    log.write_text(gen.submitted(5, 0, T0))
    db = tmp_path / "t.db"
    ingest(db, log)
    why = job(db, "5.0", "--why", now=NOW)["why"]
    assert "give the output of `condor_q -l 5.0` with gwtrace ingest --job-ads" in why["missing"][-1]


def test_real_job_ad_expressions_are_evaluated_by_the_bindings():
    """HTCondor's own test ad: RequestMemory = ifthenelse(MemoryUsage isnt undefined, MemoryUsage,
    (ImageSize + 1023) / 1024), RequestDisk = DiskUsage; its Requirements' clauses on Arch, OpSys, Disk and
    HasFileTransfer use what glidein records do not say: unchecked, not blamed."""
    from gwtrace.journey.state import keep_ad, new_state

    (raw,) = read_ads([str(DATA / "job_classad_long_form.ad")])
    state = new_state(15, 0)
    keep_ad(state, raw)
    offers = [{"site": "S", "entry": "E", "cpus": 1, "memory_mb": 2048, "gpus": 0, "started": T0, "ended": None,
               "max_walltime": None}]
    result = match.compare(state["ad"], offers, T0 + 60)
    assert result["blocking"] == [] and result["fit"] == 1
    assert result["unchecked"] == ['TARGET.Arch == "X86_64"', 'TARGET.OpSys == "LINUX"',
                                   "TARGET.Disk >= RequestDisk", "TARGET.HasFileTransfer"]
    classad = match.bindings()
    assert match.evaluate(classad, match.job_ad(classad, state["ad"]), "RequestMemory") == 1
    offers[0]["memory_mb"] = 0
    (memory,) = match.compare(state["ad"], offers, T0 + 60)["blocking"]
    assert (memory["kind"], memory["asked"], memory["best"]) == ("memory", 1, 0)


def test_split_and_keeps_or_and_strings_whole():
    assert match.split_and('(a && b) && c') == ["a", "b", "c"]
    assert match.split_and('a || b && c') == ["a || b && c"]
    assert match.split_and('(x == "&&") && (y)') == ['x == "&&"', "y"]
    assert match.split_and('((a) && (b || c))') == ["a", "b || c"]
    assert match.split_and("") == []


def test_memory_advice_quotes_the_measured_peak(tmp_path):
    """Run 1 (evicted) measured 3000 MB (006 MemoryUsage): ask for between that and the largest offer; a job
    whose peak is above every offer is told to look for bigger glideins instead."""
    log = tmp_path / "u.log"
    log.write_text(gen.submitted(90, 0, T0) + gen.executing(90, 0, T0 + 100) + gen.image(90, 0, T0 + 200, 3000)
                   + gen.evicted(90, 0, T0 + 300))
    ads = tmp_path / "ads"
    ads.write_text(ad_text(90, 0, RequestMemory=64000))
    db = tmp_path / "t.db"
    with TraceStore(db) as store:
        store.put_glidein_records([_offered(1)])
    ingest(db, log, ads=[ads], schedd="submit.example.org")
    top = _why(db)["reasons"][0]
    assert top["evidence"][1] == "its measured peak: 3000 MB (from run 1's MemoryUsage)"
    assert top["advice"] == ("lower request_memory to between 3000 MB (its measured peak) and 16000 MB "
                             "(e.g. request_memory = 3601), or widen DESIRED_Sites")
    log.write_text(log.read_text() + gen.executing(90, 0, T0 + 400) + gen.image(90, 0, T0 + 500, 20000)
                   + gen.evicted(90, 0, T0 + 600))
    ingest(db, log, schedd="submit.example.org")
    assert _why(db)["reasons"][0]["advice"] == ("it needs more than the 16000 MB glideins there offer: add sites "
                                                "with bigger glideins to DESIRED_Sites, or make the job use less "
                                                "memory")
