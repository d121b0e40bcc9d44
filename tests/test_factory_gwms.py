"""GlideinWMS's per-glidein figures: gwtrace against GlideinWMS's own functions and hand-checked values."""

from pathlib import Path

import pytest

import factory_gen as gen
import gwms_upstream
from gwtrace.factory.gwms_stats import completed_stats, extract_log_data
from gwtrace.factory.outfile import parse_out

pytestmark = pytest.mark.skipif(not gen.samples_present(), reason="../shared/samples/glideinwms not found")

MIXED = [gen.Job(100, 3600), gen.Job(200, 600, "signal", 9), gen.Job(4000, 2000, "status", 1),
         gen.Job(6500, 1800, "signal", 15), gen.Job(8000, 200, "other", 0)]


def variants():
    """Every .out variant the generator makes, by name (text)."""
    return {
        "cms-real-sample": gen.CMS_OUT.read_text(),
        "realglidein-sample": gen.REAL_OUT.read_text(),
        "stats-real": gen.cms_out(MIXED, fmt="real"),
        "stats-pre-3.10.12": gen.cms_out(MIXED, fmt="old"),
        "stats-real-1core": gen.cms_out(MIXED, cpus=1, fmt="real"),
        "stats-no-jobs": gen.cms_out([]),
        "failed-validation": gen.failed_validation_out(),
        "short-condor": gen.cms_out(MIXED, condor_duration=3, glidein_duration=70),
        "condor-exactly-5s": gen.cms_out([], condor_duration=5, glidein_duration=70),
        "condor-longer-than-glidein": gen.cms_out(MIXED, condor_duration=9000, glidein_duration=8376),
        "gpus": gen.cms_out([gen.Job(50, 3000, gpus=1)], gpus=2),
        "hard-killed": gen.cms_out(MIXED, hard_killed=True),
        "two-stats-blocks": gen.cms_out(MIXED).replace(
            "=== End Stats of main ===\n",
            "=== End Stats of main ===\n=== Stats of gpu ===\n(Real) Total jobs 9 utilization 99\n"
            "Total goodZ jobs 9 (100%) utilization 99 (100%)\n=== End Stats of gpu ===\n"),
        "monitoring-slot1-skipped": gen.cms_out(MIXED).replace("Stats of main", "Stats of slot1"),
        "no-condor-ended-number": gen.cms_out(MIXED).replace("after 8307 ===", "after x ==="),
        "empty": "",
        "tiny": "=== x\n",
    }


VARIANTS = variants() if gen.samples_present() else {}


def _out(text: str):
    return parse_out(text.encode())


def test_cms_sample_gives_the_factory_unittest_expectation():
    # glideinwms unittests/test_factory_glideFactoryLogParser.py expects exactly this on the sample
    assert extract_log_data(parse_out(gen.CMS_OUT.read_bytes())) == {
        "condor_started": 1, "validation_duration": 63, "glidein_duration": 8376, "activations_claims": 34,
        "condor_duration": 8307, "stats": {}}


def test_facts_worked_example_by_hand():
    # ../shared/notes/glideinwms-facts.md §6.1/§7.1: G 8376, C 8307, V 63, T 4200 (Real), goodZ 450
    text = gen.cms_out([gen.Job(100, 3600), gen.Job(200, 600, "signal", 9)], cpus=8, fmt="real")
    data = extract_log_data(_out(text))
    assert data["stats"]["Total"] == {"jobsnr": 2, "secs": 4200}  # (Real): not normalized
    assert data["stats"]["goodZ"] == {"jobsnr": 1, "secs": 450}  # normalized: int(3600 / 8)
    assert data["stats"]["badSignal"] == {"jobsnr": 1, "secs": 75}
    gwms, notes = completed_stats(data)
    assert notes == []
    assert (gwms["duration"], gwms["condor_duration"], gwms["validation_duration"]) == (8376, 8307, 63)
    assert gwms["jobs_duration"] == {"total": 4200, "goodput": 450, "terminated": 450}
    # the completed_jobs log prints them with %i
    assert {k: int(v) for k, v in gwms["wastemill"].items()} == {
        "validation": 7, "idle": 494, "nosuccess": 892, "badput": 946}


def test_pre_3_10_12_stats_are_all_normalized():
    text = gen.cms_out([gen.Job(100, 3600), gen.Job(200, 600, "signal", 9)], cpus=8, fmt="old")
    data = extract_log_data(_out(text))
    assert data["stats"]["Total"] == {"jobsnr": 1, "secs": 525}
    gwms, _ = completed_stats(data)
    assert gwms["jobs_duration"] == {"total": 525, "goodput": 450, "terminated": 450}


def test_short_condor_is_all_waste_and_no_jobs():
    gwms, _ = completed_stats(extract_log_data(_out(VARIANTS["short-condor"])))
    assert gwms["jobsnr"] == 0 and gwms["duration"] == 70
    assert gwms["wastemill"] == {"validation": 1000, "idle": 0, "nosuccess": 0, "badput": 1000}


def test_missing_out_counts_zero_glidein_time_like_the_factory():
    gwms, _ = completed_stats(extract_log_data(None), 100, 900)
    assert gwms["duration"] == 0 and not gwms["condor_started"]


def test_without_log_data_the_condorg_time_is_used():
    gwms, _ = completed_stats(None, 100, 900)
    assert gwms["duration"] == 800


def test_missing_stats_names_are_said_not_hidden():
    gwms, notes = completed_stats(extract_log_data(parse_out(gen.CMS_OUT.read_bytes())))
    assert gwms["jobs_duration"]["total"] == 0
    assert any("KeyError" in note and "'Total'" in note for note in notes)


UPSTREAM = gwms_upstream.load()
needs_upstream = pytest.mark.skipif(UPSTREAM is None, reason=gwms_upstream.HINT)


@needs_upstream
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_extract_log_data_equals_glideinwms(name, tmp_path: Path):
    path = tmp_path / "job.1.0.out"
    path.write_text(VARIANTS[name])
    theirs = UPSTREAM[0]._extract_log_data(str(path))
    assert extract_log_data(parse_out(path.read_bytes())) == theirs


@needs_upstream
@pytest.mark.parametrize("name", sorted(VARIANTS))
@pytest.mark.parametrize("times", [(None, None), (1656036400, 1656044700)])
def test_completed_stats_equal_glideinwms(name, times, tmp_path: Path):
    path = tmp_path / "job.1.0.out"
    path.write_text(VARIANTS[name])
    data = UPSTREAM[0]._extract_log_data(str(path))
    ours, notes = completed_stats(extract_log_data(parse_out(path.read_bytes())), *times)
    try:
        theirs = gwms_upstream.their_completed_stats(UPSTREAM[1], data, *times)
    except KeyError as err:  # GlideinWMS's own crash on a stats block without that name
        assert any("KeyError" in note for note in notes), err
        return
    assert notes == []
    assert ours["duration"] == theirs["duration"]
    assert ours["condor_started"] == bool(theirs["condor_started"])
    assert ours["condor_duration"] == theirs["condor_duration"]
    assert ours["jobsnr"] == theirs["jobsnr"]
    assert ours["jobs_duration"] == theirs["jobs_duration"]
    assert ours["wastemill"] == theirs["wastemill"]
