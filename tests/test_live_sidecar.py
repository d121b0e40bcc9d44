"""Live snapshots from a real sidecar (issue 13): they reach gwtrace serve or the embedded store while the
glidein runs, never an OTLP collector, and the spans finally exported are the same with or without them."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from conftest import GWTRACE, LIB, Sidecar, clean_env
from gwtrace.wire.span import SpanRecord
from gwtrace.sidecar.snapshot import Snapshotter, snapshot_target
from gwtrace.sidecar.snapshot_send import SendError
from gwtrace.store import TraceStore

SERVE = "import sys; from gwtrace.cli.serve import main; sys.exit(main(sys.argv[1:]))"
GLIDEIN = """
trace_begin glidein
trace_run validate.sh true
trace_begin condor slots=8
trace_begin user_job condor.job_id=12.0
trace_event started
while [[ ! -e $GO ]]; do sleep 0.05; done
trace_end 0 payload=done
trace_end
trace_end
"""
RESOURCE = "glidein.site=FNAL,glidein.entry=fnal_ce1,glidein.uuid=u-live-1"


def start_serve(db: Path):
    proc = subprocess.Popen([sys.executable, "-c", SERVE, "--port", "0", "--db", str(db)],
                            stderr=subprocess.PIPE, text=True, env=clean_env())
    m = re.search(r"listening on (http://\S+) ", proc.stderr.readline())
    assert m, proc.stderr.read()
    return proc, m.group(1)


def stop_serve(proc) -> None:
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=20)


def get_json(url: str):
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.load(resp)


def wait_until(check, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


def run_glidein(tmp: Path, env, while_running=None):
    """The glidein-like script in a real bash; ``while_running`` is called while the job span is open."""
    go = tmp / "go"
    proc = subprocess.Popen(["bash", "-c", f'source "{LIB}"\n{GLIDEIN}'], env={**env, "GO": str(go)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen = while_running() if while_running else time.sleep(1.5)
    finally:
        go.touch()
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and out == "" and err == ""
    return seen


def canonical(spans):
    """What must not depend on snapshots: every span's name, parent, attributes, status and events."""
    names = {s.span_id: s.name for s in spans}
    return sorted((s.name, names.get(s.parent_id, ""), sorted((k, v) for k, v in s.attributes.items() if k != "process.pid"),
                   s.status_code, s.status_message, [e[0] for e in s.events], s.scope) for s in spans)


def test_snapshots_never_change_nor_duplicate_the_exported_spans(tmp_path, receiver):
    serve, url = start_serve(tmp_path / "live.db")
    exported = {}
    try:
        for mode in ("on", "off"):
            # Spans go to the OTLP receiver; snapshots (when on) to a real gwtrace serve.
            extra = {"GWTRACE_SNAPSHOT_INTERVAL": "0.2", "GWTRACE_SNAPSHOT_ENDPOINT": url + "/v1/gwtrace/snapshot"} \
                if mode == "on" else {"GWTRACE_SNAPSHOT_INTERVAL": "0"}
            env = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.endpoint, OTEL_RESOURCE_ATTRIBUTES=RESOURCE,
                            GWTRACE_HOME=str(tmp_path / mode), **extra)
            sc = Sidecar(tmp_path / f"gw-{mode}", env)
            env = sc.start()
            before = len(receiver.spans)

            def running():
                if mode == "off":
                    time.sleep(1.5)
                    return None
                return wait_until(lambda: [g for g in get_json(url + "/ui/api/now")["glideins"]
                                           if g["phase"] == "running" and g["jobs"]])
            seen = run_glidein(tmp_path, env, running)
            # status.json is rewritten at most once a second
            status = wait_until(lambda: (lambda st: st if mode == "off" or int(st.get("snapshots_sent", 0)) else None)(
                sc.status()))
            assert sc.stop().returncode == 0
            receiver.wait_for(before + 4)
            time.sleep(0.3)                                 # anything more (a duplicate) would arrive by now
            exported[mode] = receiver.spans[before:]
            if mode == "on":
                assert seen[0]["jobs"][0]["job_id"] == "12.0" and seen[0]["site"] == "FNAL"
                assert int(status["snapshots_sent"]) >= 1 and int(status["snapshot_failures"]) == 0
            else:
                assert "snapshots_sent" not in status
    finally:
        stop_serve(serve)
    on, off = exported["on"], exported["off"]
    assert len(on) == len(off) == 4
    assert len({(s.trace_id, s.span_id) for s in on}) == 4            # nothing twice
    assert canonical(on) == canonical(off)
    assert not any("gwtrace.snapshot" in s.attributes for s in on)
    assert {s.scope for s in on} == {"gwtrace.bash"}
    # The collector got only /v1/traces requests (the receiver 404s and would not count any other path).
    with TraceStore(tmp_path / "live.db", create=False) as store:
        assert store.span_count() == 0                                 # serve got snapshots, never spans


def test_embedded_store_gets_snapshots_until_the_real_spans(tmp_path):
    home = tmp_path / "home"
    env = clean_env(GWTRACE_HOME=str(home), GWTRACE_SNAPSHOT_INTERVAL="0.2", OTEL_RESOURCE_ATTRIBUTES=RESOURCE)
    sc = Sidecar(tmp_path / "gw", env)
    env = sc.start()
    db = home / "traces.db"
    wait_until(db.exists)          # the sidecar is ready (its event log) before its exporter made the store

    def now_json():
        out = subprocess.run([GWTRACE, "now", "--store", str(db), "--format", "json"], env=env,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    def running():
        seen = wait_until(lambda: [g for g in now_json()["glideins"] if g["phase"] == "running"])
        table = subprocess.run([GWTRACE, "now", "--store", str(db)], env=env, capture_output=True, text=True,
                               timeout=60)
        return seen, table

    seen, table = run_glidein(tmp_path, env, running)
    assert seen[0]["uuid"] == "u-live-1" and seen[0]["jobs"][0]["job_id"] == "12.0"
    assert sc.stop().returncode == 0
    data = now_json()
    assert data["glideins"] == [] and data["totals"]["alive"] == 0     # the root span arrived: snapshot dropped
    with TraceStore(db, create=False) as store:
        assert store.span_count() == 4
    assert table.returncode == 0 and "FNAL / fnal_ce1: 1 alive, 1 job(s) running" in table.stdout
    assert re.search(r"u-live-1  running for \d+s  up \d+s  jobs: 12\.0 \(\d+s\)", table.stdout), table.stdout


def test_an_otlp_collector_never_gets_snapshots_unless_told_it_is_gwtrace():
    assert snapshot_target({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger:4318"})[0] == "off"
    assert snapshot_target({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://c:4318/v1/traces",
                            "GWTRACE_SNAPSHOT_ENDPOINT": "gwtrace"}) == ("url", "https://c:4318/v1/gwtrace/snapshot")
    assert snapshot_target({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/",
                            "GWTRACE_SNAPSHOT_ENDPOINT": "gwtrace"}) == ("url", "http://c:4318/v1/gwtrace/snapshot")
    assert snapshot_target({}) == ("store", "")
    assert snapshot_target({"GWTRACE_SNAPSHOT_INTERVAL": "0"})[0] == "off"
    assert snapshot_target({"GWTRACE_EXPORT": "ship-home", "GWTRACE_SNAPSHOT_ENDPOINT": "http://x/"})[0] == "off"


class FlakySender:
    destination = "test"

    def __init__(self):
        self.bodies, self.fail = [], None

    def send(self, body):
        if self.fail:
            raise self.fail
        self.bodies.append(body)

    def close(self):
        pass


def test_heartbeat_when_nothing_changed_and_failures_are_counted_not_fatal():
    sender = FlakySender()
    snap = Snapshotter(sender, 60.0, {"service.name": "glidein"}, "k")
    spans = [SpanRecord("0af7651916cd43dd8448eb211c80319c", "00f067aa0ba902b7", "", False, 1, "", "glidein", 5, 1,
                        attributes={"a": 1})]
    before = [(s.attributes.copy(), s.end_us, s.status) for s in spans]
    full = snap.take(spans, offset=100)
    assert snap.wait_idle() and len(sender.bodies) == 1
    beat = snap.take(spans, offset=100)                 # nothing read since: a heartbeat
    assert snap.wait_idle() and len(beat) < len(full) and snap.counters["snapshots_unchanged"] == 1
    sender.fail = SendError("the store has no snapshot of this glidein", unknown=True)
    snap.take(spans, offset=100)
    assert snap.wait_idle() and snap.counters["snapshot_failures"] == 1 and snap.last_error
    sender.fail = None
    snap.take(spans, offset=100)                        # the store forgot it: a full one again
    assert snap.wait_idle()
    again = ExportTraceServiceRequest()
    again.ParseFromString(sender.bodies[-1])
    assert [s.name for s in again.resource_spans[0].scope_spans[0].spans] == ["glidein"]
    assert snap.counters["snapshots_sent"] == 2
    assert [(s.attributes, s.end_us, s.status) for s in spans] == before     # the records are untouched
    snap.close()


def test_a_hung_or_wrong_snapshot_endpoint_is_counted_and_never_delays_the_spans(tmp_path, receiver):
    from otlp_receiver import OtlpReceiver

    for mode in ("hang", "404"):
        bad = OtlpReceiver().start()
        bad.hang = mode == "hang"
        env = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.endpoint, OTEL_EXPORTER_OTLP_TIMEOUT="1000",
                        GWTRACE_SNAPSHOT_INTERVAL="0.2", GWTRACE_SNAPSHOT_ENDPOINT=f"http://127.0.0.1:{bad.port}/v1/gwtrace/snapshot",
                        GWTRACE_HOME=str(tmp_path / mode))
        sc = Sidecar(tmp_path / f"gw-{mode}", env)
        env = sc.start()
        before = len(receiver.spans)
        run_glidein(tmp_path, env)
        status = wait_until(lambda: (lambda st: st if int(st.get("snapshot_failures", 0)) >= 1 else None)(sc.status()))
        assert ("HTTP 404" if mode == "404" else "timed out") in status["last_snapshot_error"]
        started = time.monotonic()
        assert sc.stop().returncode == 0
        assert time.monotonic() - started < 8                   # not held by the hung snapshot
        assert len(receiver.wait_for(before + 4)) - before == 4
        assert bad.count == 0                                    # it never took anything as spans
        (tmp_path / "go").unlink()
        bad.hang = False
        bad.stop()


def test_a_sidecar_taking_the_directory_over_replaces_the_same_glidein(tmp_path):
    """SIGKILL and a new sidecar on the directory: still one glidein (keyed by host and directory without a uuid)."""
    home = tmp_path / "home"
    env = clean_env(GWTRACE_HOME=str(home), GWTRACE_SNAPSHOT_INTERVAL="0.2")
    sc = Sidecar(tmp_path / "gw", env)
    env = sc.start()
    db = home / "traces.db"

    def rows():
        if not db.exists():
            return []
        with TraceStore(db, create=False) as store:
            return store.live_snapshots()

    def running():
        first = wait_until(rows)
        old_pid = sc.pid
        sc.kill()
        assert int(sc.start()["GWTRACE_SIDECAR_PID"]) != old_pid
        later = wait_until(lambda: [r for r in rows() if r["received_ns"] > first[0]["received_ns"]])
        return first, later

    first, later = run_glidein(tmp_path, env, running)
    assert len(first) == len(later) == 1 and first[0]["key"] == later[0]["key"]
    assert first[0]["key"].startswith("sidecar-") and later[0]["phase"] == "running"
    assert sc.stop().returncode == 0
    assert rows() == []
