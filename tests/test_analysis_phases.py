"""The phase model: every glidein's phases tile its life, from files or traces alike."""

import random

import pytest

from conftest import demo_factory
import factory_gen as gen
import synthetic
from gwtrace.analysis.phases import lifetime, phases
from gwtrace.factory.collect import collect
from gwtrace.store import TraceStore

demo = demo_factory(needs_htcondor=False)


def assert_tiles(record):
    got = phases(record)
    begin, end = lifetime(record)
    if begin is None:
        assert got == []
        return got
    assert got, record.get("cluster")
    assert got[0].start == begin and got[-1].end == end
    for before, after in zip(got, got[1:]):
        assert before.end == after.start and before.end > before.start
    assert sum(p.seconds for p in got) == pytest.approx(end - begin)
    return got


@pytest.mark.skipif(not gen.samples_present(), reason="../shared/samples/glideinwms not found")
def test_every_sample_and_generated_variant_tiles(tmp_path):
    gen.factory_dir(tmp_path / "variants")
    glideins, _ = demo.generate(300, 8, demo.PLANTS, 2.0, 1790000000)
    demo.write_factory(tmp_path / "demo", glideins)
    records = [r.to_dict() for r in collect([str(tmp_path)]).records]
    assert len(records) > 300
    for rec in records:
        assert_tiles(rec)


@pytest.mark.skipif(not gen.samples_present(), reason="../shared/samples/glideinwms not found")
def test_the_real_glidein_has_its_queue_scripts_htcondor_and_cleanup(tmp_path):
    gen.factory_dir(tmp_path)
    real = next(r for r in collect([str(tmp_path)]).records if r.cluster == 13).to_dict()
    names = [p.name for p in assert_tiles(real)]
    assert names[:2] == ["factory_queue", "ce_queue"]
    assert sum(n.startswith("script:") for n in names) >= 2 and "download" in names  # (1 s resolution: zero-length scripts merge away)
    assert names[-1] == "cleanup" and "htcondor_start" in names
    assert not any(n.endswith("condor_startup.sh") for n in names)   # HTCondor's own script is HTCondor


def test_a_failed_validation_ends_in_the_failing_script_then_cleanup():
    rec = {"submitted": 0, "ce_submitted": 10, "started": 100, "ended": 400, "status": "ERROR",
           "scripts": [{"id": "a.sh", "start": 110, "end": 120, "status": "OK"},
                       {"id": "validate_node.sh", "start": 130, "end": 150, "status": "ERROR"}],
           "jobs": [], "condor_start": None, "condor_end": None}
    got = assert_tiles(rec)
    assert [p.name for p in got] == ["factory_queue", "ce_queue", "download", "script:a.sh", "download",
                                     "script:validate_node.sh", "cleanup"]
    assert got[5].failed and got[-1].seconds == 250


def test_jobs_idle_stretches_and_the_tail():
    rec = {"started": 0, "ended": 1000, "status": "OK", "condor_start": 100, "condor_end": 990,
           "scripts": [{"id": "a.sh", "start": 10, "end": 50, "status": "OK"}],
           "jobs": [{"start": 150, "end": 400}, {"start": 300, "end": 500}, {"start": 600, "end": 700}]}
    got = [(p.name, p.start, p.end) for p in assert_tiles(rec)]
    assert got == [("download", 0, 10), ("script:a.sh", 10, 50), ("htcondor_start", 50, 100),
                   ("first_match", 100, 150), ("running", 150, 500), ("idle_between", 500, 600),
                   ("running", 600, 700), ("idle_tail", 700, 990), ("cleanup", 990, 1000)]


def test_a_glidein_that_never_got_a_job_waits_for_a_match_until_htcondor_ends():
    rec = {"started": 0, "ended": 2000, "condor_start": 60, "condor_end": 1300, "jobs": [], "scripts": [],
           "status": "OK"}
    assert [p.name for p in assert_tiles(rec)] == ["htcondor_start", "first_match", "cleanup"]


def test_a_hard_killed_glidein_ends_unknown():
    rec = {"started": 0, "ended": 5000, "condor_start": 60, "condor_end": None, "status": "UNKNOWN",
           "jobs": [{"start": 100, "end": 3000}], "scripts": []}
    got = assert_tiles(rec)
    assert got[-1].name == "unknown" and "HTCondor's end" in got[-1].reason


def test_clock_skew_never_makes_a_negative_phase():
    rec = {"submitted": 100, "ce_submitted": 90, "started": 95, "ended": 300, "condor_start": 80,
           "condor_end": 250, "jobs": [{"start": 70, "end": 200}], "scripts": [], "status": "OK"}
    assert_tiles(rec)


def test_traced_glideins_tile_too(tmp_path):
    rng = random.Random(12)
    with TraceStore(tmp_path / "t.db") as store:
        for index in range(5):
            store.ingest(synthetic.glidein_trace(rng, 1_790_000_000 * 10**9 + index * 10**12, fail=index == 2))
        records = list(store.glidein_records())
    assert len(records) == 5
    for rec in records:
        names = [p.name for p in assert_tiles(rec)]
        assert any(n.startswith("script:") for n in names)


def test_trends_flag_a_site_whose_last_day_is_worse():
    from gwtrace.analysis.stats import trends

    day = 86400
    records = []
    for d in range(3):
        for i in range(40):
            failed = (d == 2 and i < 12) or (d < 2 and i == 0)
            records.append({"site": "X", "started": 1_790_006_400 + d * day + i * 60, "status": "ERROR" if failed
                            else "OK", "scripts": []})
            records.append({"site": "Y", "started": 1_790_006_400 + d * day + i * 60, "status": "OK", "scripts": []})
    by_site = {t["site"]: t for t in trends(records)}
    assert by_site["X"]["worse"] and "30%" in by_site["X"]["worse"]
    assert by_site["Y"]["worse"] is None
    assert [d["failure_rate"] for d in by_site["X"]["days"]] == [0.025, 0.025, 0.3]
