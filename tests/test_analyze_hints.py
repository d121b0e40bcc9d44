"""gwtrace analyze --hints: a planted factory gives exactly its planted problems, a clean one none."""

import json

import pytest

from conftest import demo_factory
from gwtrace.cli.analyze import main
from gwtrace.analysis.hints import Thresholds, hints
from gwtrace.factory.collect import collect

demo = demo_factory()


EXPECTED = {"failing": ("failing_script", "site"), "slow_script": ("slow_script", "site"),
            "long_tail": ("idle_tail", "entry"), "preempted": ("preempted_jobs", "entry"),
            "ce_wait": ("ce_wait", "entry"), "no_jobs": ("no_jobs", "entry")}


@pytest.fixture(scope="module")
def planted(planted_pool):
    return planted_pool


def _records(root):
    found = collect([str(root)])
    assert found.errors == []
    return [r.to_dict() for r in found.records]


def test_the_planted_problems_are_the_hints_with_their_scope(planted):
    root, where = planted
    found = hints(_records(root))
    got = {(h.kind, tuple(sorted(h.scope.items()))) for h in found}
    for plant, (kind, scope_key) in EXPECTED.items():
        assert any(k == kind and dict(scope)[scope_key] == where[plant] for k, scope in got), (plant, got)
    assert len(found) == len(EXPECTED), [h.summary for h in found]
    for unit in ("pilot_hours", "requested_hours"):
        mine = [h for h in found if h.cost_unit == unit]
        assert [h.cost_per_day for h in mine] == sorted((h.cost_per_day for h in mine), reverse=True)
        assert [h.rank for h in mine] == list(range(1, len(mine) + 1))
    units = [h.cost_unit for h in found]
    assert units == sorted(units, key=("pilot_hours", "requested_hours").index)   # CE waits after, apart
    for hint in found:
        assert hint.count > 0 and hint.glideins and all(len(g["trace_id"]) == 32 for g in hint.glideins)
        assert hint.evidence and hint.action


def test_the_script_hints_name_the_planted_script(planted):
    root, where = planted
    by_kind = {h.kind: h for h in hints(_records(root))}
    assert by_kind["failing_script"].scope["script"].endswith("validate_node.sh")
    assert by_kind["slow_script"].scope["script"].endswith("singularity_setup.sh")
    assert by_kind["failing_script"].evidence["failure_rate"] > 0.3


def test_a_clean_factory_gives_no_hint(tmp_path):
    glideins, where = demo.generate(1200, 9, [], 3.0, 1790000000)
    assert where == {}
    demo.write_factory(tmp_path, glideins)
    assert hints(_records(tmp_path)) == []


def test_thresholds_are_settable_and_a_bad_one_is_one_error(planted, capsys):
    root, _ = planted
    loose = hints(_records(root), Thresholds.parse(["idle_tail=100000", "min_glideins=10"]))
    assert "idle_tail" not in {h.kind for h in loose}
    with pytest.raises(ValueError, match="not a threshold"):
        Thresholds.parse(["nonsense=1"])
    with pytest.raises(SystemExit):
        main(["--factory-logs", str(root), "--threshold", "idle_tail"])
    assert "not a threshold" in capsys.readouterr().err


def test_cli_json_has_the_phases_the_scripts_and_ranked_hints(planted, capsys):
    root, where = planted
    assert main(["--factory-logs", str(root), "--format", "json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert {row["entry"] for row in body["phases"]} >= {where["long_tail"], where["no_jobs"]}
    pilot = [h for h in body["hints"] if h["cost_unit"] == "pilot_hours"]
    assert pilot[0]["cost_per_day"] >= pilot[-1]["cost_per_day"]
    assert {h["cost_unit_text"] for h in body["hints"]} == {
        "canonical core-hours of pilot time lost per day",
        "canonical core-hours requested but not running per day (not pilot time)"}
    tail = next(r for r in body["phases"] if r["entry"] == where["long_tail"] and r["phase"] == "idle_tail")
    assert tail["p50_s"] > 3600
    others = [r for r in body["phases"] if r["entry"] != where["long_tail"] and r["phase"] == "idle_tail"]
    assert others and max(r["p50_s"] for r in others) < 1800
    failing = [r for r in body["scripts"] if r["failed"] and r["failure_rate"] > 0.3]
    assert [(r["site"], r["script"].endswith("validate_node.sh")) for r in failing] == [(where["failing"], True)]
    assert failing[0]["messages"][0]["message"] == "/cvmfs/oasis.opensciencegrid.org is not mounted"
    queued = [r for r in body["phases"] if r["phase"] in ("factory_queue", "ce_queue")]
    assert queued and all(r["canonical_hours"] is None for r in queued)   # queues are not pilot time


def test_the_median_from_counts_is_the_median():
    import random
    import statistics
    from collections import Counter

    from gwtrace.analysis.hints import _median_of_counts

    rng = random.Random(1)
    for n in range(1, 80):
        values = [rng.randrange(0, 9) for _ in range(n)]
        assert _median_of_counts(Counter(values)) == statistics.median(values)
