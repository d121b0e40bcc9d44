"""Glidein records from a generated factory log directory (variants of the real samples)."""

import io
import json
import time
from pathlib import Path

import pytest
from opentelemetry.sdk.resources import Resource

import factory_gen as gen
from gwtrace.export.otlp import to_readable_spans
from gwtrace.factory.canonical import CATEGORIES, job_units
from gwtrace.cli.glideins import main
from gwtrace.factory.collect import collect
from gwtrace.factory.to_trace import glidein_trace_id, record_to_spans, resource_attributes

pytestmark = pytest.mark.skipif(not gen.samples_present(), reason="../shared/samples/glideinwms not found")

CONTRACT = {"cluster", "proc", "schedd", "factory", "site", "entry", "frontend", "glidein_uuid", "cpus", "memory_mb",
            "gpus", "submitted", "started", "ended", "status", "failed_script", "incomplete", "gwms", "canonical",
            "jobs"}
GWMS = {"duration", "condor_started", "condor_duration", "validation_duration", "jobsnr", "jobs_duration",
        "wastemill"}


@pytest.fixture(scope="module")
def factory(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("factory")
    gen.factory_dir(root)
    return root


@pytest.fixture(scope="module")
def records(factory):
    found = collect([str(factory)])
    assert found.errors == []
    return {rec.cluster: rec for rec in found.records}


def test_one_record_per_glidein_never_a_silent_skip(records):
    assert sorted(records) == list(range(1, 14))


def test_six_categories_add_up_to_the_canonical_time_of_every_glidein(records):
    for rec in records.values():
        wall = (rec.ended - rec.started) if rec.started is not None and rec.ended is not None else 0
        parts = sum(rec.canonical[c] for c in CATEGORIES)
        assert parts == pytest.approx(rec.canonical["total"]), rec.cluster
        assert rec.canonical["total"] == pytest.approx(job_units(rec.cpus, rec.memory_mb) * wall), rec.cluster
        assert sum(rec.canonical_gpu[c] for c in CATEGORIES) == pytest.approx(rec.gpus * wall), rec.cluster


def test_json_contract_fields(records):
    data = json.loads(json.dumps(records[2].to_dict()))
    assert CONTRACT <= set(data) and GWMS <= set(data["gwms"])
    assert set(data["gwms"]["jobs_duration"]) == {"total", "goodput", "terminated"}
    assert set(data["gwms"]["wastemill"]) == {"validation", "idle", "nosuccess", "badput"}
    assert set(CATEGORIES) <= set(data["canonical"])


def test_identity_and_resources_from_header_and_glidein_config(records):
    rec = records[2]
    assert (rec.factory, rec.schedd, rec.site) == ("OSG", "schedd_glideins9@gfactory-2.opensciencegrid.org",
                                                   "Hephy-Vienna")
    assert (rec.entry, rec.frontend, rec.glidein_uuid) == ("CMSHTPC_T2_AT_Vienna_ce-1", "CMSG-v1_0.main-token",
                                                           "3ce9dfca-0e7f-4d69-bfc9-5f58cb266ab7")
    assert (rec.cpus, rec.memory_mb, rec.gpus) == (8, 20000, 0)
    assert rec.submitted == 1656036000 and rec.started == 1656036325 and rec.ended == 1656044701
    assert rec.ce_submitted == 1656036020


def test_real_glidein_pair(records):
    rec = records[13]
    assert (rec.status, rec.failed_script, rec.site, rec.entry) == ("ERROR", "condor_startup.sh", "TEST_SITE",
                                                                    "TEST_ENTRY")
    assert len(rec.scripts) == 29 and rec.scripts[0].id == "main/setup_script.sh"
    assert rec.scripts[-1].status == "ERROR"
    assert rec.canonical["validation_fail"] == rec.canonical["total"] == 365
    assert not rec.incomplete


def test_jobs_from_startd_history_with_requested_resources(records):
    jobs = records[2].jobs
    assert [j.job_id for j in jobs] == ["100.0", "101.0", "102.0", "103.0"]
    assert jobs[1].exit_signal == 9 and jobs[2].exit_code == 1 and jobs[0].start == 1656036490
    assert records[2].canonical["preemption_badput"] > 0  # the last job was killed at HTCondor's end
    assert records[2].canonical["misconfig_badput"] == 0


def test_jobs_from_stats_lines_are_placed_in_local_time(records):
    assert [(j.start, j.end) for j in records[3].jobs] == [(j.start, j.end) for j in records[2].jobs]
    assert any("1 core + 2 GB assumed" in n for n in records[3].notes)


def test_failed_validation_and_short_condor(records):
    assert records[4].status == "ERROR" and records[4].failed_script == "validate_node.sh"
    assert records[4].canonical["validation_fail"] == records[4].canonical["total"] > 0
    assert records[5].canonical["validation_fail"] == records[5].canonical["total"] > 0


def test_no_job_pilot_is_a_decision_problem(records):
    assert records[11].canonical["decision_problem"] == records[11].canonical["total"] > 0


def test_blackhole_pilot_has_misconfiguration_badput(records):
    assert records[10].canonical["misconfig_badput"] > 0


def test_gpus(records):
    rec = records[6]
    assert rec.gpus == 2 and rec.jobs[0].gpus == 1
    assert rec.canonical_gpu["goodput"] == 3000


@pytest.mark.parametrize("cluster, reason", [
    (1, "no .err file"), (7, "no .out file (yet)"), (8, "truncated"), (9, "hard-killed"), (9, "Glidein ending"),
    (12, ".out has only 0 bytes")])
def test_bad_or_partial_files_give_incomplete_records(records, cluster, reason):
    assert records[cluster].incomplete
    assert any(reason in r for r in records[cluster].incomplete_reasons), records[cluster].incomplete_reasons


def test_condorg_log_iso_format_holds_and_removal(records):
    rec = records[7]
    assert rec.status == "REMOVED" and rec.submitted == 1656036000
    assert [h["time"] for h in rec.holds] == [1656036400] and rec.holds[0]["code"] == 3


def test_condorg_log_legacy_format(tmp_path):
    # legacy stamps have no year: HTCondor's reader assumes a recent one, so use recent times
    base = int(time.time()) - 3 * 86400
    entry = tmp_path / "entry_X"
    entry.mkdir()
    (entry / "condor_activity_1.log").write_text(gen.event_log([(0, 5, 0, base), (1, 5, 0, base + 300),
                                                                (5, 5, 0, base + 3000)], iso=False))
    rec = collect([str(tmp_path)]).records[0]
    assert (rec.submitted, rec.started, rec.ended) == (base, base + 300, base + 3000)
    assert rec.entry == "X" and rec.incomplete


def test_bad_files_give_one_error_line_and_lose_nothing(tmp_path, factory):
    entry = tmp_path / "entry_Y"
    entry.mkdir()
    (entry / "condor_activity_bad.log").write_text("this is not an event log\n")
    (entry / "job.3.0.out").write_text(gen.cms_out([]))
    out, err = io.StringIO(), io.StringIO()
    assert main(["--factory-logs", str(tmp_path), str(tmp_path / "nope"), "--format", "json"], out, err) == 1
    assert len(json.loads(out.getvalue())) == 1
    lines = err.getvalue().splitlines()
    assert len(lines) == 2 and "no HTCondor job event" in lines[0] and "not a directory" in lines[1]


def test_cli_formats_and_filters(factory):
    def run(*args):
        out = io.StringIO()
        assert main(["--factory-logs", str(factory), *args], out, io.StringIO()) == 0
        return out.getvalue()

    assert len(json.loads(run("--format", "json"))) == 13
    assert len(json.loads(run("--format", "json", "--site", "TEST_SITE"))) == 1
    assert len(json.loads(run("--format", "json", "--entry", "TEST_ENTRY"))) == 1
    assert len(json.loads(run("--format", "json", "--frontend", "CMSG-v1_0"))) == 10
    assert len(json.loads(run("--format", "json", "--since", "2026-01-01T00:00:00"))) == 1
    assert len(json.loads(run("--format", "json", "--until", "1656036301"))) == 2  # 12 (condor-G only) and 7
    csv_lines = run("--format", "csv").splitlines()
    assert csv_lines[0].startswith("cluster,proc,site") and len(csv_lines) == 14
    table = run().splitlines()
    assert table[0].split()[:3] == ["cluster", "proc", "site"] and len(table) == 14


def test_trace_ids_are_deterministic_and_reingest_is_identical(factory, records):
    again = {rec.cluster: rec for rec in collect([str(factory)]).records}
    for cluster, rec in records.items():
        first, second = record_to_spans(rec), record_to_spans(again[cluster])
        assert [(s.trace_id, s.span_id, s.parent_id, s.start_us, s.end_us) for s in first] == \
               [(s.trace_id, s.span_id, s.parent_id, s.start_us, s.end_us) for s in second]
    spans = record_to_spans(records[2])
    assert {s.trace_id for s in spans} == {glidein_trace_id("OSG", "schedd_glideins9@gfactory-2.opensciencegrid.org",
                                                            2, 0, "3ce9dfca-0e7f-4d69-bfc9-5f58cb266ab7")}
    assert len({s.span_id for s in spans}) == len(spans)
    assert glidein_trace_id("OSG", "s", 2, 0) != glidein_trace_id("OSG", "s", 2, 1)


def test_the_trace_id_derivation_matches_its_documented_vectors():
    """docs/accounting.md gives these (made with printf | sha256sum) for other languages: the uuid is
    appended after a NUL when known; without it, the uuid-less id of a glidein known by Condor-G only."""
    assert glidein_trace_id("TestFactory", "schedd_glideins2@127.0.0.1", 7, 0,
                            "e32d4214-00ec-aa7a-71a4-9c8ea544e028") == "a5a9c71ef077a9e09688929ff2e8ac1b"
    assert glidein_trace_id("TestFactory", "schedd_glideins2@127.0.0.1", 7, 0) == "6a185495228d15aea3c9a67365f4c0eb"
    assert glidein_trace_id("F", "s", 7, 0, "uuid-a") != glidein_trace_id("F", "s", 7, 0, "uuid-b")


def test_spans_cover_queue_scripts_condor_and_jobs(records):
    spans = record_to_spans(records[13])
    names = [s.name for s in spans]
    assert names[:2] == ["glidein", "condorg.queued"] and "condor" in names
    assert "main/setup_script.sh" in names and spans[0].status == "error"
    assert {"factory.queue", "ce.queue"} <= set(names)
    assert [s.name for s in record_to_spans(records[2])].count("job") == 4


def test_spans_export(records):
    spans = record_to_spans(records[2])
    readable = to_readable_spans(spans, Resource.create(resource_attributes(records[2])))
    assert len(readable) == len(spans) and readable[0].resource.attributes["glidein.site"] == "Hephy-Vienna"


def test_gwtrace_glideins_is_a_command_of_the_real_cli(factory):
    """`gwtrace glideins` goes through the installed entry point, not only main()."""
    import subprocess

    done = subprocess.run(["gwtrace", "glideins", "--factory-logs", str(factory), "--format", "json"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    records = json.loads(done.stdout)
    assert records and {"cluster", "proc", "gwms", "canonical", "incomplete"} <= set(records[0])


def test_glidein_lifetime_from_its_config(records):
    """GLIDEIN_Max_Walltime of the real glidein's config dump (171000 s): what gwtrace job --why compares a
    job's wall time with (issue 30)."""
    assert records[2].max_walltime == 171000
    assert records[13].max_walltime is None
