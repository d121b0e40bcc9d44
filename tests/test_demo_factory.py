"""examples/demo_factory.py writes files the factory parsers read whole, with its problems where it says."""

import collections

import pytest

from conftest import demo_factory
from gwtrace.factory.canonical import CATEGORIES
from gwtrace.factory.collect import collect

demo = demo_factory()


def _records(tmp_path, *args):
    assert demo.main(["--out", str(tmp_path), "--glideins", "400", "--end", "1790000000", *args]) == 0
    found = collect([str(tmp_path)])
    assert found.errors == []
    return found.records


def test_every_generated_glidein_is_a_complete_record_whose_categories_add_up(tmp_path):
    records = _records(tmp_path)
    assert len(records) == 400
    for rec in records:
        assert not rec.incomplete, (rec.cluster, rec.incomplete_reasons)
        assert rec.submitted is not None and rec.submitted <= rec.started < rec.ended
        total = sum(rec.canonical[c] for c in CATEGORIES if c != "total")
        assert total == pytest.approx(rec.canonical["total"], rel=1e-9, abs=1e-6)


def test_the_planted_problems_are_where_the_generator_says(tmp_path, capsys):
    records = _records(tmp_path, "--seed", "3")
    where = dict(line.split()[1::2] for line in capsys.readouterr().out.splitlines() if line.startswith("  planted "))
    by_site = collections.defaultdict(list)
    by_entry = collections.defaultdict(list)
    for rec in records:
        by_site[rec.site].append(rec)
        by_entry[rec.entry].append(rec)

    def failure_rate(recs):
        return sum(r.status == "ERROR" for r in recs) / len(recs)

    assert failure_rate(by_site[where["failing"]]) > 0.3
    assert max(failure_rate(v) for k, v in by_site.items() if k != where["failing"]) < 0.1
    assert all(not r.jobs for r in by_entry[where["no_jobs"]] if r.status == "OK")
    preempted = [j for r in by_entry[where["preempted"]] for j in r.jobs if j.preempted]
    assert len(preempted) > len(by_entry[where["preempted"]]) / 2


def test_a_clean_factory_plants_nothing(tmp_path, capsys):
    records = _records(tmp_path, "--clean")
    assert "  planted " not in capsys.readouterr().out
    assert sum(r.status == "ERROR" for r in records) / len(records) < 0.05
