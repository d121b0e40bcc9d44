"""Outliers (robust z-score on log duration) and compare (BubbleUp-like) on generated factories."""

import json

import pytest

from conftest import demo_factory
from gwtrace.cli.analyze import main
from gwtrace.analysis.outliers import compare_spec, outliers
from gwtrace.factory.collect import collect

demo = demo_factory()


def _records(root, plants, seed):
    glideins, where = demo.generate(900, seed, plants, 2.0, 1790000000)
    demo.write_factory(root, glideins)
    return [r.to_dict() for r in collect([str(root)]).records], where


def test_planted_extremes_are_the_top_outliers(tmp_path):
    records, _ = _records(tmp_path, [], 21)
    by_entry = {}
    for rec in records:
        if rec["status"] == "OK" and rec["scripts"]:
            by_entry.setdefault(rec["entry"], []).append(rec)
    entry, recs = max(by_entry.items(), key=lambda item: len(item[1]))
    planted = recs[:3]
    for rec in planted:   # validate_node.sh 60x its length (and a quarter of an hour) in three glideins of one entry
        script = next(s for s in rec["scripts"] if s["id"].endswith("validate_node.sh"))
        script["end"] = script["start"] + 60 * max(15, script["end"] - script["start"])
    found = outliers(records)
    top = [(r["glidein"], r["phase"]) for r in found[:3]]
    expected = {(f"{r['cluster']}.{r['proc']}@{r['schedd']}", "script:main/validate_node.sh") for r in planted}
    assert set(top) == expected
    assert all(r["entry"] == entry and r["score"] > 3.5 and r["n"] >= 20 for r in found[:3])


def test_a_far_but_trivial_phase_is_not_an_outlier_and_cut_rows_are_said(tmp_path, capsys):
    records, _ = _records(tmp_path, [], 26)
    entry = max({r["entry"] for r in records}, key=lambda e: sum(r["entry"] == e for r in records))
    ok = [r for r in records if r["entry"] == entry and r["status"] == "OK" and r["scripts"]]
    for rec in ok[:5]:   # cvmfs_setup.sh from ~6 s to 150 s: a huge score, under 150 s of effect
        script = next(s for s in rec["scripts"] if s["id"].endswith("cvmfs_setup.sh"))
        script["end"] = script["start"] + 150
    hits = [r for r in outliers(records, min_extra=0) if r["phase"] == "script:main/cvmfs_setup.sh"]
    assert len(hits) >= 5 and all(r["score"] > 3.5 for r in hits)
    assert not [r for r in outliers(records) if r["extra_seconds"] < 300]      # default: >= 300 s of effect
    planted = {f"{r['cluster']}.{r['proc']}@{r['schedd']}" for r in ok[:5]}
    assert planted <= {r["glidein"] for r in hits}
    assert not planted & {r["glidein"] for r in outliers(records)}
    from gwtrace.cli.analyze import render_outliers
    import io
    out = io.StringIO()
    render_outliers(hits, out, top=2, min_extra=0)
    assert f"2 of {len(hits)} shown" in out.getvalue().splitlines()[0]
    assert len(out.getvalue().splitlines()) == 1 + 1 + 2          # the line, the head, two rows


def test_small_groups_are_not_judged(tmp_path):
    records, _ = _records(tmp_path, [], 22)
    few = [r for r in records if r["entry"] == records[0]["entry"]][:10]
    assert outliers(few) == []


def test_compare_puts_the_planted_failing_site_on_top(tmp_path):
    records, where = _records(tmp_path, ["failing", "long_tail"], 23)
    label, rows = compare_spec(records, "failed")
    assert label == "failed glideins"
    sites = [r for r in rows if r["attribute"] == "site"]
    assert sites[0]["value"] == where["failing"] and sites[0]["difference"] > 0.5
    assert rows[0]["difference"] >= rows[-1]["difference"]
    _, slow = compare_spec(records, "slow:idle_tail")
    assert (slow[0]["attribute"], slow[0]["value"]) == ("entry", where["long_tail"])


def test_cli_outliers_and_compare_json(tmp_path, capsys):
    records, where = _records(tmp_path / "f", ["failing"], 24)
    assert main(["--factory-logs", str(tmp_path / "f"), "--compare", "failed", "--format", "json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["compare"]["selection"] == "failed glideins" and body["compare"]["values"]
    assert main(["--factory-logs", str(tmp_path / "f"), "--outliers", "--format", "json"]) == 0
    assert "outliers" in json.loads(capsys.readouterr().out)
    with pytest.raises(SystemExit):
        main(["--factory-logs", str(tmp_path / "f"), "--compare", "slow"])
    assert "--compare takes" in capsys.readouterr().err


def test_plot_dir_writes_the_three_charts(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    _records(tmp_path / "f", ["long_tail"], 25)
    assert main(["--factory-logs", str(tmp_path / "f"), "--hints", "--plot", str(tmp_path / "plots")]) == 0
    written = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert written == ["failure_rate_by_site.svg", "phase_lengths.svg", "phases_by_group.svg"]
    for name in written:
        text = (tmp_path / "plots" / name).read_text()
        assert "Matplotlib" in text and text.count("<path") > 10
    assert "OSG_US_" in (tmp_path / "plots" / "phases_by_group.svg").read_text()
