"""One trace, one record per glidein, whatever reaches the factory (issue 26 §3, §7).

The real glidein of ../shared/samples/glideinwms (job.7.0.out/.err, HTCondor failed) reaches the
factory three ways: its live spans (the steps after the set-up, exported while it runs, with the
ids the node derives: docs/accounting.md), the block its sidecar wrote into the ``.err`` (every live
span, the root included) and ``ingest --factory-logs`` (the backfill from the same files). In every
order of arrival the store holds one trace with one root, one span per step (the live one where
both exist), and one record; ingesting everything again changes nothing.
"""

import itertools
import json
import os
import shutil

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource

import factory_gen as gen
from gwtrace.cli import main
from gwtrace.export.otlp import to_readable_spans
from gwtrace.factory.collect import collect
from gwtrace.factory.from_trace import RUNNING
from gwtrace.factory.record import NO_OUT_FILE
from gwtrace.factory.to_trace import glidein_trace_id, record_to_spans, script_span_key, span_id
from gwtrace.server.jaeger import trace_from_chunks
from gwtrace.sidecar.assembler import Assembler
from gwtrace.store import TraceStore
from gwtrace.wire.blocks import frame
from gwtrace.wire.events import format_event, parse_line

pytestmark = pytest.mark.skipif(not gen.samples_present(), reason="../shared/samples/glideinwms not found")

UUID = "e32d4214-00ec-aa7a-71a4-9c8ea544e028"
OTHER_UUID = "0badc0de-0000-4000-8000-000000000007"
FACTORY, SCHEDD = "TestFactory", "schedd_glideins2@127.0.0.1"
START, END = 1795465016, 1795465381          # the sample's glidein_startup.sh start and end
FIRST_LIVE = 12                              # steps from here on run after the set-up: traced live
LIVE_MEMORY = 2500                           # the root's final glidein.memory_mb (the files only assume it)
US = 1_000_000


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("GWTRACE_HOME", str(tmp_path / "home"))
    for key in list(os.environ):
        if key.startswith("OTEL_EXPORTER_OTLP"):
            monkeypatch.delenv(key)
    return tmp_path / "home"


def condorg_log(entry, ended=True):
    events = [(0, 7, 0, START - 120), (27, 7, 0, START - 100), (1, 7, 0, START - 5)]
    events += [(5, 7, 0, END + 10)] if ended else []
    (entry / "condor_activity_20261123_fe_test.log").write_text(gen.event_log(events))


def entry_dir(root, uuid=UUID, out=True):
    """A client log directory with the real glidein (its uuid replaced by ``uuid``) and its Condor-G log."""
    entry = root / "client" / "user_fe" / "glidein_gfactory_instance" / "entry_TEST_ENTRY"
    entry.mkdir(parents=True)
    condorg_log(entry)
    if out:
        for path in (gen.REAL_OUT, gen.REAL_ERR):
            (entry / path.name.replace("realglidein_", "")).write_text(path.read_text().replace(UUID, uuid))
    return entry


def resource(uuid=UUID):
    return {"service.name": "glidein", "glidein.uuid": uuid, "glidein.factory": FACTORY, "glidein.schedd": SCHEDD,
            "glidein.cluster_id": 7, "glidein.proc_id": 0, "glidein.site": "TEST_SITE", "glidein.entry": "TEST_ENTRY",
            "glidein.client": "fe_test.main", "host.name": "vm"}


def live_spans(uuid=UUID, root=True, steps=True):
    """The node's spans of the sample glidein, as the contract derives them: the root (its own start, end,
    exit and final resources) and the steps after the set-up with µs times, GlideinWMS's <detail> as the
    message of a failed one."""
    trace = glidein_trace_id(FACTORY, SCHEDD, 7, 0, uuid)
    root_id = span_id(trace, "glidein")
    lines = [format_event("B", START * US + 123456, 100, trace, root_id, "-", "0", "01", "-", "glidein")]
    for index, script in enumerate(sample_record().scripts):
        if index < FIRST_LIVE or not steps:
            continue
        sid = span_id(trace, script_span_key(index, script.id))
        begin = script.start * US + 250_000 + index
        status = "0" if script.status == "OK" else f"error:{script.detail}"
        lines.append(format_event("B", begin, 200 + index, trace, sid, root_id, "0", "01", "-", script.id))
        lines.append(format_event("E", max(begin + 900, script.end * US + 400_000), 200 + index, trace, sid, status))
    lines.append(format_event("E", END * US + 654321, 100, trace, root_id, "error:HTCondor failed (condor_startup.sh)",
                              attributes={"glidein.exit_code": 1, "glidein.failed_script": "condor_startup.sh",
                                          "glidein.cpus": 1, "glidein.memory_mb": LIVE_MEMORY, "glidein.gpus": 0}))
    asm = Assembler()
    spans = [s for s in (asm.feed(parse_line(line.rstrip(b"\n"))) for line in lines) if s is not None]
    return [s for s in spans if root or s.span_id != root_id]


def request(spans, uuid=UUID):
    return encode_spans(to_readable_spans(spans, Resource(resource(uuid))))


_SAMPLE = []


def sample_record():
    if not _SAMPLE:
        from gwtrace.factory.errfile import parse_err
        from gwtrace.factory.outfile import parse_out
        from gwtrace.factory.record import build_record

        _SAMPLE.append(build_record(7, 0, parse_out(gen.REAL_OUT.read_bytes()), parse_err(gen.REAL_ERR.read_bytes())))
    return _SAMPLE[0]


class Arrivals:
    """The three ways the glidein reaches the factory, each a step that can come in any order."""

    def __init__(self, root, uuid=UUID):
        self.factory = root / "factory"
        self.entry = entry_dir(self.factory, uuid)
        self.uuid = uuid
        err = self.entry / "job.7.0.err"
        block = request(live_spans(uuid), uuid).SerializeToString()
        err.write_text(err.read_text() + frame("otlp", block, spans=len(live_spans(uuid))))
        self.ledgers = 0

    def live(self):
        with TraceStore() as store:
            store.ingest(request(live_spans(self.uuid, root=False), self.uuid))   # what the collector got while it ran

    def err(self):
        self.ledgers += 1            # a fresh ledger: re-sending the block reaches the store again
        ledger = self.factory.parent / f"ledger{self.ledgers}"
        assert main(["ingest", "--ledger", str(ledger), str(self.entry / "job.7.0.err")]) == 0

    def backfill(self):
        assert main(["ingest", "--factory-logs", str(self.factory)]) == 0


def stored(trace_id):
    """What the store holds of the glidein: its spans, its records, its chunk count."""
    with TraceStore() as store:
        spans = sorted((s["span_id"], s["parent_span_id"], s["name"], s["start_ns"], s["end_ns"], s["status_code"],
                        s["status_message"], s["attributes"].get("gwtrace.source")) for s in store.get_trace(trace_id))
        records = list(store.glidein_records())
        chunks = store.reader().execute("SELECT count(*) FROM chunks").fetchone()[0]
        return spans, records, chunks, store.trace_count()


ORDERS = list(itertools.permutations(("live", "err", "backfill")))


@pytest.mark.parametrize("order", ORDERS, ids=["-".join(o) for o in ORDERS])
def test_live_err_and_backfill_in_any_order_give_one_trace_one_root_one_record(tmp_path, home, order, capsys):
    arrivals = Arrivals(tmp_path)
    for step in order:
        getattr(arrivals, step)()
    trace = glidein_trace_id(FACTORY, SCHEDD, 7, 0, UUID)
    spans, records, chunks, traces = stored(trace)
    (rec,) = collect([str(arrivals.factory)]).records
    assert traces == 1
    assert len(spans) == len(record_to_spans(rec))           # one span per step, queue, HTCondor, root
    with TraceStore() as store:
        trace_spans = store.get_trace(trace)
        jaeger = trace_from_chunks(store.trace_chunks(trace))
    ids = {s["span_id"] for s in trace_spans}
    roots = [s for s in trace_spans if s["parent_span_id"] not in ids]          # as gwtrace show sees them
    assert [(r["name"], r["span_id"], r["parent_span_id"]) for r in roots] == [("glidein", span_id(trace, "glidein"), "")]
    assert "gwtrace.source" not in roots[0]["attributes"] and roots[0]["status_code"] == 2    # the live root
    assert [s["spanID"] for s in jaeger["spans"] if not s["references"]] == [span_id(trace, "glidein")]
    by_id = {s["span_id"]: s for s in trace_spans}
    for index, script in enumerate(rec.scripts):
        step = by_id[span_id(trace, script_span_key(index, script.id))]
        if index >= FIRST_LIVE:                           # the live span wins: µs times, no source
            assert step["start_ns"] % 10**9 and "gwtrace.source" not in step["attributes"], script.id
        else:                                             # GlideinWMS's 1 s one fills the gap
            assert step["attributes"]["gwtrace.source"] == "factory-logs", script.id
    (condor,) = [s for s in trace_spans if s["name"] == "condor"]
    assert condor["parent_span_id"] == span_id(trace, script_span_key(len(rec.scripts) - 1, "condor_startup.sh"))
    assert by_id[condor["parent_span_id"]]["status_message"] == "See Condor logs for details"
    (one,) = records
    assert one["trace_id"] == trace and one["glidein_uuid"] == UUID and not one["incomplete"]
    assert (one["status"], one["failed_script"], one["submitted"], one["started"]) == (
        "ERROR", "condor_startup.sh", START - 120, START)
    assert one["memory_mb"] == LIVE_MEMORY and not any("MaxMemMBs" in n for n in one["notes"])
    assert f"memory_mb {LIVE_MEMORY} from its live trace (as the node reported it)" in one["notes"]
    assert one["gwms"]["duration"] == 365
    units = LIVE_MEMORY / 2048
    assert one["canonical"]["validation_fail"] == pytest.approx(one["canonical"]["total"])
    assert one["canonical"]["total"] == pytest.approx((END - START) * units)
    for step in order:                                   # everything again: nothing changes
        getattr(arrivals, step)()
    assert stored(trace) == (spans, records, chunks, traces)
    capsys.readouterr()


def test_every_order_stores_the_same_trace_and_record(tmp_path, monkeypatch):
    seen = set()
    for at, order in enumerate(ORDERS):
        monkeypatch.setenv("GWTRACE_HOME", str(tmp_path / f"home{at}"))
        arrivals = Arrivals(tmp_path / f"run{at}")
        for step in order:
            getattr(arrivals, step)()
        spans, records, _, traces = stored(glidein_trace_id(FACTORY, SCHEDD, 7, 0, UUID))
        seen.add(json.dumps([spans, records, traces], sort_keys=True))
    assert len(seen) == 1


def test_two_glideins_of_one_condorg_job_are_two_traces_and_two_records(tmp_path, home):
    """A resubmission after a schedd reset: same factory, schedd and cluster.proc, another GLIDEIN_UUID."""
    first, second = Arrivals(tmp_path / "a"), Arrivals(tmp_path / "b", OTHER_UUID)
    first.backfill()
    second.backfill()
    second.live()
    second.err()
    with TraceStore() as store:
        assert store.trace_count() == 2
        records = {r["glidein_uuid"]: r for r in store.glidein_records()}
    assert set(records) == {UUID, OTHER_UUID}
    assert records[UUID]["trace_id"] == glidein_trace_id(FACTORY, SCHEDD, 7, 0, UUID)
    assert records[OTHER_UUID]["trace_id"] == glidein_trace_id(FACTORY, SCHEDD, 7, 0, OTHER_UUID)
    assert records[OTHER_UUID]["memory_mb"] == LIVE_MEMORY            # merged with its own live trace only
    assert records[UUID]["memory_mb"] == 2048


def test_a_queued_only_record_is_replaced_when_the_out_arrives(tmp_path, home):
    factory = tmp_path / "factory"
    entry = entry_dir(factory, out=False)             # Condor-G knows it ran and ended; its .out is not back
    assert main(["ingest", "--factory-logs", str(factory)]) == 0
    with TraceStore() as store:
        (queued,) = store.glidein_records()
        bare = glidein_trace_id(queued["factory"], queued["schedd"], 7, 0)     # the Condor-G log names neither
        assert queued["trace_id"] == bare and queued["glidein_uuid"] is None and queued["incomplete"]
        assert store.get_trace(bare)
    for path in (gen.REAL_OUT, gen.REAL_ERR):
        shutil.copy(path, entry / path.name.replace("realglidein_", ""))
    assert main(["ingest", "--factory-logs", str(factory)]) == 0
    mine = glidein_trace_id(FACTORY, SCHEDD, 7, 0, UUID)
    with TraceStore() as store:
        (one,) = store.glidein_records()
        assert store.get_trace(bare) == [] and store.trace_count() == 1
        names = {s["name"] for s in store.get_trace(mine)}
    assert one["trace_id"] == mine and one["submitted"] == START - 120 and not one["incomplete"]
    assert {"glidein", "condorg.queued", "condor"} <= names


@pytest.mark.parametrize("live_first", [True, False], ids=["live-first", "condorg-first"])
def test_a_running_glidein_known_to_condorg_and_live_is_one_record_until_and_after_its_out(tmp_path, home,
                                                                                         live_first):
    factory = tmp_path / "factory"
    entry = entry_dir(factory, out=False)
    condorg_log(entry, ended=False)                   # still running: no termination yet
    with TraceStore() as store:
        if live_first:
            store.ingest(request(live_spans(root=False)))
            assert len(list(store.glidein_records())) == 1
    assert main(["ingest", "--factory-logs", str(factory)]) == 0
    if not live_first:
        with TraceStore() as store:
            store.ingest(request(live_spans(root=False)))
    with TraceStore() as store:
        (running,) = store.glidein_records()
    assert running["trace_id"] == glidein_trace_id(FACTORY, SCHEDD, 7, 0, UUID)
    assert running["submitted"] == START - 120 and running["ended"] is None and running["incomplete"]
    assert NO_OUT_FILE in running["incomplete_reasons"] and RUNNING in running["incomplete_reasons"]
    condorg_log(entry)
    for path in (gen.REAL_OUT, gen.REAL_ERR):
        shutil.copy(path, entry / path.name.replace("realglidein_", ""))
    assert main(["ingest", "--factory-logs", str(factory)]) == 0
    with TraceStore() as store:
        (done,) = store.glidein_records()
        assert store.trace_count() == 1
    assert done["trace_id"] == running["trace_id"] and not done["incomplete"] and done["ended"] == END


def test_the_live_view_shows_the_running_glidein_once_until_its_end_is_known(tmp_path, home):
    """``gwtrace now`` keeps the glidein's latest snapshot until its root arrives as a span: the live root
    and the backfilled one are the same span, so either ends the glidein in the live view, and it stays one
    root afterwards."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from gwtrace.wire.span import SpanRecord
    from gwtrace.sidecar.snapshot_wire import Encoder

    arrivals = Arrivals(tmp_path)
    trace = glidein_trace_id(FACTORY, SCHEDD, 7, 0, UUID)
    root = span_id(trace, "glidein")
    open_root = SpanRecord(trace, root, "", False, 1, "", "glidein", START * US + 123456, 100)
    snapshot = ExportTraceServiceRequest.FromString(Encoder().snapshot(
        [open_root], resource(), {"gwtrace.snapshot.key": UUID, "gwtrace.snapshot.seq": 1,
                                  "gwtrace.snapshot.taken_unix_nano": (START + 60) * 10**9,
                                  "gwtrace.snapshot.interval_s": 60.0}, False))
    with TraceStore() as store:
        assert store.put_live_snapshot(snapshot, now_ns=(START + 60) * 10**9)
    arrivals.live()                                   # its steps: still running
    with TraceStore() as store:
        [row] = store.live_snapshots()
        assert (row["root_trace_id"], row["root_span_id"]) == (trace, root)
    arrivals.backfill()                               # the factory read its .out: over
    with TraceStore() as store:
        assert store.live_snapshots() == []
    arrivals.err()
    with TraceStore() as store:
        spans = store.get_trace(trace)
        assert [s["span_id"] for s in spans if not s["parent_span_id"]] == [root]
        assert store.live_snapshots() == []


def test_a_glidein_traced_by_a_node_of_before_the_uuid_joins_its_backfill(tmp_path, home):
    """A glidein running across the factory's upgrade: its node derived the uuid-less id and put its live
    ``glidein`` span under the backfill's root. Its spans came first; the backfill joins that trace."""
    arrivals = Arrivals(tmp_path)
    old = glidein_trace_id(FACTORY, SCHEDD, 7, 0)
    lines = [format_event("B", (START + 2) * US, 100, old, "00000000000000a1", span_id(old, "glidein"), "0", "01",
                          "-", "glidein"),
             format_event("E", (END - 1) * US, 100, old, "00000000000000a1", "error:HTCondor failed")]
    asm = Assembler()
    spans = [s for s in (asm.feed(parse_line(line.rstrip(b"\n"))) for line in lines) if s is not None]
    with TraceStore() as store:
        store.ingest(request(spans))
    arrivals.backfill()
    with TraceStore() as store:
        assert store.trace_count() == 1
        names = [s["name"] for s in store.get_trace(old)]
        (one,) = store.glidein_records()
    assert names.count("glidein") == 2 and "condorg.queued" in names
    assert one["trace_id"] == old and one["glidein_uuid"] == UUID and not one["incomplete"]
