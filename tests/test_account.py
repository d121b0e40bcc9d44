"""gwtrace account: canonical time series that add up, analyze_entries' totals, pictures by matplotlib."""

import json
import sys

import pytest

import factory_gen as gen
from gwtrace.factory.account import (NOT_COMPUTABLE, EntryTotals, accumulate, entries_totals, mill_range, series)
from gwtrace.cli.account import main
from gwtrace.factory.canonical import CATEGORIES, Segment
from gwtrace.factory.collect import collect

pytestmark = pytest.mark.skipif(not gen.samples_present(), reason="../shared/samples/glideinwms not found")


@pytest.fixture(scope="module")
def factory(tmp_path_factory):
    root = tmp_path_factory.mktemp("factory")
    gen.factory_dir(root)
    return root


@pytest.fixture(scope="module")
def records(factory):
    found = collect([str(factory)])
    return found.records


@pytest.mark.parametrize("bucket", [3600, 86400])
def test_each_glideins_buckets_add_up_to_its_own_totals(records, bucket):
    assert records
    for rec in records:
        got = series([rec], bucket)
        for cat in CATEGORIES:
            assert sum(cell[cat] for cell in got.values()) == pytest.approx(rec.canonical[cat], abs=1e-6), (rec.cluster, cat)
        if rec.segments:  # a glidein crossing bucket edges is split by time
            first, last = rec.segments[0].start, rec.segments[-1].end
            assert len(got) == len({int(first // bucket), int((last - 1e-9) // bucket)}) or len(got) > 2


@pytest.mark.parametrize("bucket", [3600, 86400])
def test_the_series_is_canonical_split_buckets_summed(records, bucket):
    from gwtrace.factory.canonical import split_buckets

    expected = {}
    for rec in records:
        for start, cell in split_buckets(rec.segments, bucket).items():
            acc = expected.setdefault(start, dict.fromkeys(CATEGORIES, 0.0))
            for cat in CATEGORIES:
                acc[cat] += cell[cat]
    got = series(records, bucket)
    assert sorted(start for _, start in got) == sorted(expected)
    for (_, start), cell in got.items():
        assert {c: cell[c] for c in CATEGORIES} == pytest.approx(expected[start])


def test_groups_partition_the_whole(records):
    whole = series(records, 3600)
    for by in ("site", "entry", "frontend"):
        parts = series(records, 3600, by)
        assert sum(c["total"] for c in parts.values()) == pytest.approx(sum(c["total"] for c in whole.values()))


def test_a_period_counts_only_the_time_inside_it():
    seg = Segment(1000, 5000, {"goodput": 2.0, "overhead": 1.0})
    for (since, until), seconds in (((2000, 3000), 1000), ((6000, 7000), 0), ((None, None), 4000)):
        cells = {}
        accumulate(cells, "all", [seg], 100_000, since, until)
        cell = dict(zip(CATEGORIES, cells.get(("all", 0), [0.0] * len(CATEGORIES))))
        assert (cell["goodput"], cell["overhead"]) == (2.0 * seconds, 1.0 * seconds)


def test_per_mille_labels_are_glideinwms_ranges():
    labels = [mill_range(m) for m in (0, 1.9, 2, 14.9, 15, 59, 60, 179, 180, 399, 400, 699, 700, 998, 998.5, 1000)]
    assert labels == ["None", "None", "5m", "5m", "25m", "25m", "100m", "100m", "250m", "250m", "500m", "500m",
                      "Most", "Most", "All", "All"]


def test_analyze_entries_figures_from_the_glideinwms_per_glidein_stats():
    # the worked example of get_completed_stats (notes 7.1): G 8376, C 8307, V 63, T 4200, goodput 450
    totals = EntryTotals()
    totals.add({"duration": 8376, "condor_started": True, "jobsnr": 3,
                "jobs_duration": {"total": 4200, "goodput": 450, "terminated": 450},
                "wastemill": {"validation": 1000 * 63 / 8376, "idle": 1000 * 4107 / 8307}})
    got = totals.to_dict()
    assert got["time"] == 8376 and got["time_used"] == 4200 and got["time_wasted"] == 8376 - 4200
    assert got["badput"] == 8376 - 450
    assert got["time_validating"] == pytest.approx(63)
    assert got["time_validating_buckets"] == pytest.approx(8376 * 0.005)   # 7.5 per mille files under "5m"
    assert got["time_idle"] == pytest.approx(8376 * 4107 / 8307)          # idle per mille is against C, weighted by G
    assert got["time_idle_buckets"] == pytest.approx(8376 * 0.5)          # 494 per mille files under "500m"
    assert got["time_efficiency"] == pytest.approx(4200 / 8376)
    assert got["goodput_fraction"] == pytest.approx(450 / 8376)


def test_a_totals_row_is_the_sum_of_the_groups():
    a, b = EntryTotals(), EntryTotals()
    a.add({"duration": 100, "condor_started": True, "jobsnr": 1, "jobs_duration": {"total": 50, "goodput": 40},
           "wastemill": {"validation": 100, "idle": 500}})
    b.add({"duration": 300, "condor_started": False, "jobsnr": 0, "jobs_duration": {},
           "wastemill": {"validation": 1000, "idle": 0}})
    a.merge(b)
    got = a.to_dict()
    assert (got["glideins"], got["failed_to_start"], got["time"], got["time_used"]) == (2, 1, 400, 50)
    assert got["time_validating"] == pytest.approx(10 + 300)


def test_totals_count_the_glideins_that_ended_in_the_period(records):
    every = entries_totals(records)["all"]["glideins"]
    assert every == sum(1 for r in records if r.gwms)
    latest = max(r.ended for r in records if r.ended is not None)
    assert entries_totals(records, since=latest + 1) == {}


def test_cli_json_table_csv(factory, capsys):
    assert main(["--factory-logs", str(factory), "--format", "json", "--bucket", "1h", "--by", "site"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["demand"] == {"provisioning_bottleneck": NOT_COMPUTABLE, "insufficient_demand": NOT_COMPUTABLE}
    assert all(row["provisioning_bottleneck"] == NOT_COMPUTABLE for row in body["series"])
    assert body["series"] and all(row["total"] == pytest.approx(sum(row[c] for c in CATEGORIES), abs=0.05)
                                  for row in body["series"])
    assert main(["--factory-logs", str(factory), "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("bucket,validation_fail,") and len(lines) > 1
    assert main(["--factory-logs", str(factory)]) == 0
    text = capsys.readouterr().out
    assert "GlideinWMS's analyze_entries figures" in text and NOT_COMPUTABLE in text
    assert text.index("gwtrace figures") < text.index("GlideinWMS's analyze_entries figures")   # ours first


def test_gwtrace_figures_are_core_weighted_on_both_sides():
    # one 8-core pilot for an hour, its jobs on all 8 cores for 3400 s: 8 pilot core-hours, 7.56 of jobs
    from gwtrace.factory.figures import category_hours, own_figures

    cell = dict.fromkeys(CATEGORIES, 0.0)
    cell.update(goodput=8 * 3000.0, preemption_badput=8 * 400.0, overhead=8 * 200.0)
    cell["total"] = 8 * 3600.0
    hours = category_hours([("S", cell)])
    assert list(hours) == ["S", "total"] and hours["total"] == hours["S"]
    got = own_figures(hours["total"])
    assert got == {"pilot_hours": 8.0, "job_hours": round(8 * 3400 / 3600, 2),
                   "goodput_hours": round(8 * 3000 / 3600, 2),
                   "badput_hours": round(8 * 400 / 3600, 2), "validation_fail_hours": 0.0,
                   "idle_hours": round(8 * 200 / 3600, 2), "efficiency": round(3400 / 3600, 3),
                   "goodput_fraction": round(3000 / 3600, 3)}


def test_glideinwms_figures_in_hours_labelled_with_why_they_go_negative():
    # the same pilot as GlideinWMS >= 3.10.12 counts it: G 3600 s of wall time, C 3500, T core-summed 8 x 3400
    from gwtrace.factory.figures import GWMS_NOTE, glideinwms_block

    totals = EntryTotals()
    totals.add({"duration": 3600, "condor_started": True, "jobsnr": 8,
                "jobs_duration": {"total": 8 * 3400, "goodput": 8 * 3000, "terminated": 8 * 3400},
                "wastemill": {"validation": 1000 * 100 / 3600, "idle": 1000 * (3500 - 8 * 3400) / 3500}})
    block = glideinwms_block({"S": totals, "T": EntryTotals()})
    assert list(block["groups"]) == ["S", "T", "total"] and block["unit"].startswith("hours")
    row = block["groups"]["total"]
    assert row["time_h"] == 1.0 and row["time_used_h"] == round(8 * 3400 / 3600, 2)
    assert row["time_wasted_h"] == round((3600 - 8 * 3400) / 3600, 2) < 0
    assert row["time_idle_h"] == round(3600 * (3500 - 8 * 3400) / 3500 / 3600, 2) < 0
    assert row["time_efficiency"] == round(8 * 3400 / 3600, 3) > 1
    assert block["note"] == GWMS_NOTE and "3.10.12" in GWMS_NOTE
    assert not any(key in row for key in ("time", "time_used", "badput"))   # no seconds under an hours label


def test_units_are_honest_in_json_and_csv_has_numbers_and_a_totals_row(factory, capsys):
    import csv
    import io

    assert main(["--factory-logs", str(factory), "--format", "json", "--by", "site"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert "unit" not in body and set(body["units"]) == {"series", "figures", "glideinwms"}
    records = collect([str(factory)]).records
    lasted = sum(r.gwms["duration"] for r in records if r.gwms) / 3600
    assert body["glideinwms"]["groups"]["total"]["time_h"] == pytest.approx(lasted, abs=0.01)
    assert body["groups"][-1]["group"] == "total"
    assert body["groups"][-1]["total"] == pytest.approx(sum(g["total"] for g in body["groups"][:-1]), abs=0.05)
    assert all(f["efficiency"] is None or 0 <= f["efficiency"] <= 1 for f in body["figures"].values())
    assert all(f["idle_hours"] >= 0 for f in body["figures"].values())
    assert main(["--factory-logs", str(factory), "--format", "csv", "--by", "site"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows[-1]["bucket"] == "total" and rows[-1]["site"] == ""
    for row in rows:
        for key in CATEGORIES + ("total",):
            float(row[key])                      # a number, no unit, no words
    assert all(int(row["bucket_start"]) % 86400 == 0 for row in rows[:-1])
    assert float(rows[-1]["total"]) == pytest.approx(sum(float(r["total"]) for r in rows[:-1]), abs=0.1)


def test_plot_is_a_stacked_area_drawn_by_matplotlib(factory, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    svg = tmp_path / "acc.svg"
    assert main(["--factory-logs", str(factory), "--bucket", "1h", "--plot", str(svg)]) == 0
    text = svg.read_text()
    assert text.startswith("<?xml") and "Matplotlib" in text
    assert text.count("<path") > 6 and "goodput" in text
    png = tmp_path / "acc.png"
    assert main(["--factory-logs", str(factory), "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_is_one_clear_line(factory, tmp_path, monkeypatch, capsys):
    from gwtrace.cli import main as gwtrace_main

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert gwtrace_main(["account", "--factory-logs", str(factory), "--plot", str(tmp_path / "x.svg")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["gwtrace: --plot needs matplotlib, which this installation lacks: pip install 'gwtrace[factory]'"]


def test_per_mille_labels_equal_glideinwms_own_getMillRange():
    import gwms_upstream

    upstream = gwms_upstream.load()
    if upstream is None:
        pytest.skip(gwms_upstream.HINT)
    theirs = upstream[1].getMillRange
    for tenth in range(0, 10011):
        assert mill_range(tenth / 10) == theirs(tenth / 10), tenth / 10


def test_the_glideins_table_shows_times_as_utc_dates_and_json_keeps_epochs(factory, capsys):
    import re

    from gwtrace.cli.glideins import main as glideins

    assert glideins(["--factory-logs", str(factory)]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = lines[0].split()
    assert "started" in head and "ended" in head
    assert all(re.search(r"\b20\d\d-\d\d-\d\d \d\d:\d\d:\d\d\b", line) for line in lines[1:] if line.strip())
    assert not any(re.search(r"\b1[6-9]\d{8}\b", line) for line in lines[1:])   # no epoch seconds in the table
    assert glideins(["--factory-logs", str(factory), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and all(isinstance(r["started"], (int, float)) for r in rows if r["started"] is not None)
