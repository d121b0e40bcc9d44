"""gwtrace ingest --factory-logs: every glidein of a factory's files becomes its trace, once."""

import os

import pytest

import factory_gen as gen
from gwtrace.cli import main
from gwtrace.factory.collect import collect
from gwtrace.factory.to_trace import glidein_trace_id
from gwtrace.store import TraceStore

pytestmark = pytest.mark.skipif(not gen.samples_present(), reason="../shared/samples/glideinwms not found")


@pytest.fixture
def factory(tmp_path):
    root = tmp_path / "factory"
    gen.factory_dir(root)
    return root


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("GWTRACE_HOME", str(tmp_path / "home"))
    for key in list(os.environ):
        if key.startswith("OTEL_EXPORTER_OTLP"):
            monkeypatch.delenv(key)
    return tmp_path / "home"


def test_every_glidein_is_one_trace_with_its_deterministic_id_and_again_is_a_no_op(factory, home, capsys):
    records = collect([str(factory)]).records
    assert main(["ingest", "--factory-logs", str(factory)]) == 0
    assert "backfilled" in capsys.readouterr().err
    with TraceStore() as store:
        spans, traces = store.span_count(), store.trace_count()
        for rec in records:
            trace = store.get_trace(glidein_trace_id(rec.factory, rec.schedd, rec.cluster, rec.proc, rec.glidein_uuid))
            if rec.started is None and rec.submitted is None:
                continue  # nothing to place in time (a glidein known by name only)
            roots = [s for s in trace if s["name"] == "glidein"]
            assert len(roots) == 1, rec.cluster
            assert roots[0]["attributes"]["glidein.incomplete"] is rec.incomplete
            if rec.incomplete:
                assert roots[0]["attributes"]["glidein.incomplete_reasons"] == "; ".join(rec.incomplete_reasons)
            assert roots[0]["resource"].get("glidein.entry") == rec.entry
    assert traces >= 10 and spans > traces
    assert main(["ingest", "--factory-logs", str(factory)]) == 0
    with TraceStore() as store:
        assert (store.span_count(), store.trace_count()) == (spans, traces)


def test_an_unreadable_file_is_one_line_and_the_rest_is_sent(factory, home, capsys):
    entry = next(factory.rglob("job.2.0.out")).parent
    (entry / "condor_activity_20220625_broken.log").write_text("this is not an event log\n")
    assert main(["ingest", "--factory-logs", str(factory)]) == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if "condor_activity_20220625_broken" in line]
    assert len(lines) == 1
    with TraceStore() as store:
        assert store.trace_count() >= 10


def test_factory_logs_take_their_directories_alone(factory, home, capsys):
    with pytest.raises(SystemExit):
        main(["ingest", "--factory-logs", str(factory), "--spool", "/nonexistent"])
    assert "alone" in capsys.readouterr().err
