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


def test_every_generated_glidein_is_a_record_whose_categories_add_up(tmp_path):
    records = _records(tmp_path)
    assert len(records) == 400
    for rec in records:
        total = sum(rec.canonical[c] for c in CATEGORIES if c != "total")
        assert total == pytest.approx(rec.canonical["total"], rel=1e-9, abs=1e-6)
        if rec.status in ("OK", "ERROR"):      # ended with its files back: whole
            assert not rec.incomplete, (rec.cluster, rec.incomplete_reasons)
            assert rec.submitted is not None and rec.submitted <= rec.started < rec.ended


def test_the_demo_factory_is_as_mixed_as_a_real_one(tmp_path):
    records = _records(tmp_path, "--seed", "4")
    status = collections.Counter(r.status for r in records)
    held = [r for r in records if r.holds]
    assert held and all(r.status == "REMOVED" and r.incomplete for r in held)
    assert all(h["code"] is not None and h["reason"] for r in held for h in r.holds)
    assert status["REMOVED"] > len(held)                     # some removed while idle, never held
    killed = [r for r in records if any("hard-killed" in why for why in r.incomplete_reasons)]
    assert killed and all(r.status not in ("OK", "ERROR") for r in killed)
    assert {r.cpus for r in records} >= {4, 8} and any(r.gpus for r in records)
    assert any(j.cpus == 4 for r in records if r.cpus == 8 for j in r.jobs)          # multi-core jobs
    assert any(j.gpus for r in records if r.gpus for j in r.jobs)
    failed = [r for r in records if r.status == "ERROR"]
    # a failed glidein sleeps glidein_startup.sh's sleep_time (-v std: 1199 s) before it exits
    assert failed and all(r.ended - r.started >= demo.FAILED_SLEEP for r in failed)
    assert all(r.canonical["validation_fail"] >= demo.FAILED_SLEEP * r.cpus for r in failed)


def test_one_day_makes_a_factory_with_glideins_still_running(tmp_path, capsys):
    records = _records(tmp_path, "--days", "1")
    assert len(records) == 400
    out = capsys.readouterr().out
    running = int(out.split(" running")[0].rsplit(" ", 1)[1])
    assert running > 0 and sum(1 for r in records if not r.incomplete) > 200
    assert all(r.started is None or r.started <= 1790000000 for r in records)


def test_a_period_too_short_is_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit):
        demo.main(["--out", str(tmp_path), "--days", "0.01"])
    err = capsys.readouterr().err
    assert "at least an hour" in err and "Traceback" not in err


def test_the_planted_problems_are_where_the_generator_says(tmp_path, capsys):
    records = _records(tmp_path, "--seed", "3")
    where = dict(line.split()[1::2] for line in capsys.readouterr().out.splitlines() if line.startswith("  planted "))
    by_site = collections.defaultdict(list)
    by_entry = collections.defaultdict(list)
    for rec in records:
        by_site[rec.site].append(rec)
        by_entry[rec.entry].append(rec)

    def failure_rate(recs):
        ran = [r for r in recs if r.status in ("OK", "ERROR")]
        return sum(r.status == "ERROR" for r in ran) / len(ran)

    assert failure_rate(by_site[where["failing"]]) > 0.3
    assert max(failure_rate(v) for k, v in by_site.items() if k not in (where["failing"], None)) < 0.1
    assert all(not r.jobs for r in by_entry[where["no_jobs"]] if r.status in ("OK", "UNKNOWN"))
    preempted = [j for r in by_entry[where["preempted"]] for j in r.jobs if j.preempted]
    assert len(preempted) > len(by_entry[where["preempted"]]) / 2


def test_a_clean_factory_plants_nothing(tmp_path, capsys):
    records = _records(tmp_path, "--clean")
    assert "  planted " not in capsys.readouterr().out
    assert sum(r.status == "ERROR" for r in records) / len(records) < 0.05
    assert all(not r.incomplete for r in records if r.status in ("OK", "ERROR"))


def test_the_demos_metrics_blocks_give_the_four_resource_hints(tmp_path, monkeypatch):
    """The demo's kind=metrics blocks, in the contract's names (the machine's CPUs as system.cpu.logical.count),
    ingested as `demo.sh` does, give every resource hint docs/resources.md says the demo shows."""
    import io

    from gwtrace.analysis.resources import resource_hints
    from gwtrace.factory.ingest import ingest_outputs
    from gwtrace.store import TraceStore

    assert demo.main(["--out", str(tmp_path / "factory"), "--glideins", "400", "--end", "1790000000"]) == 0
    monkeypatch.setenv("GWTRACE_HOME", str(tmp_path / "home"))
    for var in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    db = tmp_path / "home" / "traces.db"
    err = io.StringIO()
    assert ingest_outputs([str(tmp_path / "factory")], None, str(tmp_path / "ledger"), 0, err) == 0, err.getvalue()
    assert "metrics block(s)" in err.getvalue() and "malformed" not in err.getvalue()
    with TraceStore(db) as store:
        kinds = {h.kind for h in resource_hints(store)}
        glideins = store.metric_loads()
    assert kinds == {"memory_over_request", "cores_over_request", "memory_leak", "oversubscribed_node"}, kinds
    assert glideins and all(g["cores"] and g["trace_id"] for g in glideins)


def test_the_demos_jobs_have_distinct_ids_from_the_users_schedds(tmp_path):
    """A job id names one job: no two glideins' jobs share one (they were all "1000.0"), procs of a cluster
    run on different glideins as a user's ``queue N`` does, and each GlobalJobId names its submit schedd."""
    records = _records(tmp_path)
    ids = [j.job_id for r in records for j in r.jobs]
    assert ids and len(ids) == len(set(ids)), collections.Counter(ids).most_common(3)
    assert all(j.job_id and j.job_id.count(".") == 1 for r in records for j in r.jobs)
    assert len({i.split(".")[1] for i in ids}) == demo.PROCS_PER_CLUSTER
    glideins, _ = demo.generate(60, 7, demo.PLANTS, 7, 1790000000)
    ads = "".join(demo.history(g) for g in glideins)
    assert {s for s in demo.SUBMIT_SCHEDDS if f'GlobalJobId = "{s}#' in ads} == set(demo.SUBMIT_SCHEDDS)
