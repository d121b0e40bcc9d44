"""Glidein records made from stored traces: traced glideins get records too, kept up at ingest."""

import random

import pytest

import factory_gen as gen
import synthetic
from gwtrace.factory.canonical import CATEGORIES
from gwtrace.factory.collect import collect
from gwtrace.factory.from_trace import NO_OUT, record_from_trace
from gwtrace.factory.to_trace import glidein_trace_id
from gwtrace.store import TraceStore

SECOND = 10**9
START = 1_790_000_000 * SECOND


def _store_with(tmp_path, *requests):
    store = TraceStore(tmp_path / "traces.db")
    for request in requests:
        store.ingest(request)
    return store


def test_a_traced_glidein_gets_a_record_from_its_spans(tmp_path):
    rng = random.Random(3)
    request = synthetic.glidein_trace(rng, START, n_jobs=3, uuid="g-1", site="UCSD")
    with _store_with(tmp_path, request) as store:
        records = list(store.glidein_records())
    assert len(records) == 1
    rec = records[0]
    assert (rec["site"], rec["entry"], rec["factory"], rec["glidein_uuid"], rec["cpus"]) == (
        "UCSD", "OSG_UCSD_ce1", "OSG", "g-1", 8)
    assert rec["incomplete"] and NO_OUT in rec["incomplete_reasons"] and rec["gwms"] == {}
    assert len(rec["jobs"]) == 3 and all(j["exit_code"] == 0 for j in rec["jobs"])
    assert [s["id"] for s in rec["scripts"]] == [name for _, name in synthetic.VALIDATION_SCRIPTS]
    assert rec["condor_start"] is not None and rec["status"] == "OK"
    total = sum(rec["canonical"][c] for c in CATEGORIES)
    assert total == pytest.approx(rec["canonical"]["total"]) and total > 0
    assert rec["canonical"]["goodput"] > 0 and rec["canonical"]["overhead"] > 0


def test_a_traced_glidein_that_failed_validation_is_a_validation_fail(tmp_path):
    request = synthetic.glidein_trace(random.Random(4), START, fail=True, uuid="g-2", site="CERN")
    with _store_with(tmp_path, request) as store:
        (rec,) = store.glidein_records()
    assert rec["status"] == "ERROR" and rec["failed_script"] == "validate_node.sh"
    assert rec["canonical"]["validation_fail"] == pytest.approx(rec["canonical"]["total"])
    assert rec["canonical"]["total"] > 0


def test_records_are_kept_up_as_spans_arrive_and_reads_see_them(tmp_path):
    rng = random.Random(5)
    with _store_with(tmp_path) as store:
        assert list(store.glidein_records()) == []
        for index in range(5):
            store.ingest(synthetic.glidein_trace(rng, START + index * 3600 * SECOND, n_jobs=2))
            assert len(list(store.glidein_record_rows())) == index + 1
        assert store.refresh_glidein_records() == 0     # nothing left to make
        series = store.glidein_series(3600)
        assert sum(c["total"] for c in series.values()) == pytest.approx(
            sum(r["canonical"]["total"] for r in store.glidein_records()))


@pytest.mark.skipif(not gen.samples_present(), reason="../shared/samples/glideinwms not found")
def test_a_backfilled_trace_rebuilds_the_record_its_files_gave(tmp_path):
    """A store that only got the backfilled spans (e.g. through OTLP) still has a record: the same
    identity, times, scripts, jobs and categories as the one made from the files."""
    from gwtrace.export.otlp import to_readable_spans
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from gwtrace.factory.to_trace import record_to_spans, resource_attributes

    gen.factory_dir(tmp_path / "factory")
    files = [r for r in collect([str(tmp_path / "factory")]).records if r.started is not None and r.ended]
    with TraceStore(tmp_path / "traces.db") as store:
        for rec in files:
            store.ingest(encode_spans(to_readable_spans(record_to_spans(rec), Resource(resource_attributes(rec)))))
        rebuilt = {r["trace_id"]: r for r in store.glidein_records()}
    for rec in files:
        mine = rebuilt[glidein_trace_id(rec.factory, rec.schedd, rec.cluster, rec.proc, rec.glidein_uuid)]
        for key in ("cluster", "proc", "schedd", "factory", "site", "entry", "frontend", "glidein_uuid", "cpus",
                    "memory_mb", "gpus", "submitted", "started", "ended", "failed_script"):
            assert mine[key] == getattr(rec, key), (rec.cluster, key)
        if rec.condor_start is not None and rec.condor_end is not None:  # a span needs both ends
            assert (mine["condor_start"], mine["condor_end"]) == (rec.condor_start, rec.condor_end)
        # scripts in time order (ties within the XML's one-second resolution in any order)
        assert sorted((s["start"], s["id"]) for s in mine["scripts"]) == sorted((s.start, s.id) for s in rec.scripts)
        assert len(mine["jobs"]) == len([j for j in rec.jobs if j.start is not None and j.end is not None])
        if all(j.start is not None and j.end is not None for j in rec.jobs) and rec.jobs:
            for cat in ("goodput", "preemption_badput"):
                assert mine["canonical"][cat] == pytest.approx(rec.canonical[cat], rel=1e-6, abs=1e-6), (rec.cluster, cat)


def test_the_files_record_wins_over_the_traced_one(tmp_path):
    rng = random.Random(6)
    request = synthetic.glidein_trace(rng, START, uuid="g-3", site="FNAL")
    with _store_with(tmp_path, request) as store:
        (traced,) = store.glidein_records()
        rec = record_from_trace(store.get_trace(traced["trace_id"]))
        rec.gwms = {"duration": 100, "condor_started": True, "jobsnr": 1}
        rec.incomplete, rec.incomplete_reasons = False, []
        store.put_glidein_records([rec])        # as `ingest --factory-logs` would (same identity, same id)
        store.ingest(synthetic.glidein_trace(random.Random(6), START, uuid="g-3", site="FNAL"))  # spans again
        (kept,) = store.glidein_records()
    assert kept["gwms"]["duration"] == 100 and not kept["incomplete"]


def test_scripts_run_through_the_glideins_functions_are_its_scripts():
    """At the scripts level a glidein's fetch_file has a span (gwtrace.kind=function) and the validation
    scripts it runs are its children: they are still the glidein's scripts; a script run by a script is not."""
    from gwtrace.factory.from_trace import record_from_trace

    res = {"service.name": "glidein", "glidein.site": "S", "glidein.entry": "E"}

    def span(sid, parent, name, start, end, **attrs):
        return {"trace_id": "t" * 32, "span_id": sid, "parent_span_id": parent, "name": name,
                "start_ns": start * 10**9, "end_ns": end * 10**9, "status_code": 1, "attributes": attrs,
                "resource": res}

    spans = [span("r", "", "glidein_startup.sh", 0, 100),
             span("f1", "r", "fetch_file", 1, 10, **{"gwtrace.kind": "function"}),
             span("s1", "f1", "validate_node.sh", 2, 9),
             span("n1", "s1", "inner.sh", 3, 4),
             span("s2", "r", "cvmfs_setup.sh", 11, 20)]
    rec = record_from_trace(spans)
    assert [s.id for s in rec.scripts] == ["validate_node.sh", "cvmfs_setup.sh"]


def _live_glidein(root=True, condor_ok=True):
    """A glidein traced live as the node side derives it (docs/accounting.md): the root named by the
    glidein's trace id with its final resources, its steps keyed script/<index>/<id>, no ``condor`` span."""
    from gwtrace.factory.to_trace import script_span_key, span_id

    trace = glidein_trace_id("OSG", "schedd_glideins2@f.example.org", 31, 2, "uuid-31")
    res = {"service.name": "glidein", "glidein.factory": "OSG", "glidein.schedd": "schedd_glideins2@f.example.org",
           "glidein.cluster_id": 31, "glidein.proc_id": 2, "glidein.uuid": "uuid-31", "glidein.site": "S",
           "glidein.entry": "E", "glidein.cpus": 1}               # set-up time: before glidein_cpus_setup.sh ran
    root_id = span_id(trace, "glidein")
    # positions in the glidein's result list: the steps before the set-up are not in a live-only trace
    steps = [(12, "main/cat_consts.sh", 10, 11, 1), (13, "main/gwms-python", 11, 12, 1),
             (28, "condor_startup.sh", 20, 3600, 1 if condor_ok else 2)]
    spans = [{"trace_id": trace, "span_id": span_id(trace, script_span_key(i, name)), "parent_span_id": root_id,
              "name": name, "start_ns": START + a * SECOND + 123_000, "end_ns": START + b * SECOND, "status_code": code,
              "status_message": "" if code == 1 else "HTCondor did not start", "attributes": {}, "resource": res}
             for i, name, a, b, code in steps]
    if root:
        spans.append({"trace_id": trace, "span_id": root_id, "parent_span_id": "", "name": "glidein",
                      "start_ns": START, "end_ns": START + 3700 * SECOND, "status_code": 1 if condor_ok else 2,
                      "status_message": "", "resource": res,
                      "attributes": {"glidein.exit_code": 0 if condor_ok else 1, "glidein.cpus": 8,
                                     "glidein.memory_mb": 16000, "glidein.gpus": 1}})
    return spans


def test_a_live_only_glidein_that_reached_htcondor_is_not_a_validation_fail():
    rec = record_from_trace(_live_glidein())
    assert (rec.cpus, rec.memory_mb, rec.gpus) == (8, 16000, 1)       # the root's final values, not set-up's
    assert [s.id for s in rec.scripts] == ["main/cat_consts.sh", "main/gwms-python", "condor_startup.sh"]
    assert (rec.condor_start, rec.condor_end) == (START // SECOND + 20, START // SECOND + 3600)
    assert rec.status == "OK" and rec.incomplete_reasons == [NO_OUT]
    assert rec.canonical["validation_fail"] == 0
    assert rec.canonical["decision_problem"] == pytest.approx(rec.canonical["total"]) and rec.canonical["total"] > 0


def test_a_live_glidein_whose_htcondor_failed_is_an_error_naming_the_step():
    rec = record_from_trace(_live_glidein(condor_ok=False))
    assert (rec.status, rec.failed_script) == ("ERROR", "condor_startup.sh")
    assert rec.scripts[-1].detail == "HTCondor did not start"
    assert rec.canonical["validation_fail"] == pytest.approx(rec.canonical["total"])


def test_a_glidein_without_its_root_yet_says_so_and_a_jobs_trace_is_no_glidein():
    from gwtrace.factory.from_trace import RUNNING

    running = _live_glidein(root=False)
    rec = record_from_trace(running)
    assert rec.ended is None and rec.started == START // SECOND + 10
    assert rec.incomplete and RUNNING in rec.incomplete_reasons
    assert [s.id for s in rec.scripts][-1] == "condor_startup.sh"
    elsewhere = [dict(span, trace_id="ab" * 16) for span in running]   # the glidein's resource in a job's trace
    assert record_from_trace(elsewhere) is None
