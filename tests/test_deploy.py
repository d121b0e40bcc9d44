"""Deployment on a worker node with no way out (issue 9, part 1): spans ride
home in the glidein's stderr and `gwtrace ingest` delivers them once per
destination; `ingest --spool` is safe to repeat and to mistype."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import GWTRACE, Sidecar, clean_env, run_bash
from gwtrace.factory.ledger import Ledger
from otlp_receiver import OtlpReceiver
from test_faults import spans_script


def ingest(env, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([GWTRACE, "ingest", *args], env=env, capture_output=True, text=True, timeout=120)


def shipped_home(tmp_path: Path, spans: int) -> Path:
    """``logs/job.1.0.err`` holding ``spans`` spans a script wrote and a sidecar stop shipped home."""
    env = clean_env(GWTRACE_HOME=str(tmp_path / "home"), GWTRACE_EXPORT="ship-home")
    gw = tmp_path / "gw"
    gw.mkdir(mode=0o700)
    assert run_bash(spans_script(spans), dict(env, GWTRACE_DIR=str(gw))).returncode == 0
    err = tmp_path / "logs" / "job.1.0.err"
    err.parent.mkdir()
    stop = subprocess.run([GWTRACE, "sidecar", "stop", "--dir", str(gw), "--ship-to", str(err)], env=env,
                          capture_output=True, text=True, timeout=60)
    assert stop.returncode == 0, stop.stderr
    return err


def test_ship_home_only_sends_nothing_and_everything_rides_home_at_stop(tmp_path):
    """GWTRACE_EXPORT=ship-home (the set-up script's choice when no collector is
    configured): nothing is sent or stored on the node, the stop does not wait,
    and every span is in the blocks written to --ship-to."""
    receiver = OtlpReceiver().start()
    try:
        err = tmp_path / "job.7.0.err"
        env = clean_env(GWTRACE_EXPORT="ship-home", GWTRACE_HOME=str(tmp_path / "node-home"),
                        GWTRACE_STOP_TIMEOUT="30")
        start = subprocess.run([GWTRACE, "sidecar", "start", "--dir", str(tmp_path / "gw"),
                                "--ship-to", str(err)], env=env, capture_output=True, text=True, timeout=60)
        assert start.returncode == 0, start.stderr
        sc = Sidecar(tmp_path / "gw", env)
        for line in start.stdout.split(";"):
            if "=" in line:
                name, value = line.replace("export", "").strip().split("=", 1)
                sc.env[name] = value.strip("'")
        assert run_bash(spans_script(300), sc.env).returncode == 0
        stop = sc.stop()
        assert stop.returncode == 0, stop.stderr
        assert "spans_shipped=300" in stop.stderr and "spans_exported=0" in stop.stderr
        assert not (tmp_path / "node-home").exists()          # no store on the node
        home = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.endpoint,
                         GWTRACE_HOME=str(tmp_path / "factory"))
        out = ingest(home, str(tmp_path))
        assert out.returncode == 0, out.stderr
        assert sorted(s.name for s in receiver.wait_for(300)) == sorted(f"s{i}" for i in range(300))
    finally:
        receiver.stop()


def test_the_ledger_is_kept_per_destination(tmp_path):
    """The same block goes once to each collector or store, never twice to one."""
    path = tmp_path / "ingested.sha256"
    first = Ledger(path, "OTLP/HTTP http://a/v1/traces")
    first.add("d1")
    assert "d1" in Ledger(path, "OTLP/HTTP http://a/v1/traces").seen
    assert "d1" not in Ledger(path, "OTLP/HTTP http://b/v1/traces").seen
    path.write_text(path.read_text() + "d0\n")                 # a line from before destinations
    assert "d0" in Ledger(path, "OTLP/HTTP http://b/v1/traces").seen


def test_ingest_sends_again_into_another_collector_never_twice_into_one(tmp_path):
    err = shipped_home(tmp_path, 20)
    a, b = OtlpReceiver().start(), OtlpReceiver().start()
    try:
        ledger = str(tmp_path / "ledger")
        to_a = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=a.endpoint)
        to_b = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=b.endpoint)
        assert ingest(to_a, "--ledger", ledger, str(err.parent)).returncode == 0
        assert len(a.wait_for(20)) == 20
        again = ingest(to_a, "--ledger", ledger, str(err.parent))
        assert again.returncode == 0 and "1 already ingested" in again.stderr
        assert ingest(to_b, "--ledger", ledger, str(err.parent)).returncode == 0
        assert len(b.wait_for(20)) == 20
        assert len(a.spans) == 20                                # nothing twice into a
    finally:
        a.stop()
        b.stop()


def test_ingest_spool_on_a_missing_directory_fails_in_one_line_and_creates_nothing(tmp_path):
    env = clean_env(GWTRACE_HOME=str(tmp_path / "home"))
    out = ingest(env, "--spool", str(tmp_path / "no" / "such"))
    assert out.returncode == 1
    assert out.stderr.count("\n") == 1 and "no sidecar directory" in out.stderr
    assert not (tmp_path / "no").exists() and not (tmp_path / "home").exists()


def test_a_second_ingest_spool_sends_nothing_twice(tmp_path):
    receiver = OtlpReceiver().start()
    try:
        env = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.endpoint, GWTRACE_HOME=str(tmp_path / "h"))
        gw = tmp_path / "gw"
        gw.mkdir(mode=0o700)
        assert run_bash(spans_script(40), dict(env, GWTRACE_DIR=str(gw))).returncode == 0
        first = ingest(env, "--spool", str(gw))
        assert first.returncode == 0, first.stderr
        assert len(receiver.wait_for(40)) == 40
        second = ingest(env, "--spool", str(gw))
        assert second.returncode == 0, second.stderr
        receiver.wait_for(41, timeout=2)
        assert len(receiver.spans) == 40
    finally:
        receiver.stop()


def test_ingest_watch_follows_client_log_directories_as_glideins_complete(tmp_path):
    """A .err that appears (and settles) after the watcher started is ingested
    once; the watcher ends cleanly on SIGTERM; a missing directory is one line."""
    import signal
    import time

    env = clean_env(GWTRACE_HOME=str(tmp_path / "node"), GWTRACE_EXPORT="ship-home")
    gw = tmp_path / "gw"
    gw.mkdir(mode=0o700)
    assert run_bash(spans_script(15), dict(env, GWTRACE_DIR=str(gw))).returncode == 0
    shipped = tmp_path / "shipped.err"
    assert subprocess.run([GWTRACE, "sidecar", "stop", "--dir", str(gw), "--ship-to", str(shipped)], env=env,
                          capture_output=True, timeout=60).returncode == 0
    logs = tmp_path / "client" / "user_fe" / "glidein_gf" / "entry_E"
    logs.mkdir(parents=True)
    receiver = OtlpReceiver().start()
    try:
        wenv = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.endpoint, GWTRACE_HOME=str(tmp_path / "f"))
        watcher = subprocess.Popen([GWTRACE, "ingest", "--watch", str(tmp_path / "client"), "--interval", "0.2",
                                    "--settle", "0.5"], env=wenv, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        (logs / "job.42.0.err").write_bytes(b"some glidein stderr\n" + shipped.read_bytes())
        assert len(receiver.wait_for(15, timeout=30)) == 15
        time.sleep(1.5)                                      # more scans: nothing twice
        assert len(receiver.spans) == 15
        watcher.send_signal(signal.SIGTERM)
        assert watcher.wait(timeout=30) == 0
        assert "ingested 1 block(s), 15 span(s) from 1 file(s)" in watcher.stderr.read()
    finally:
        receiver.stop()
    missing = ingest(clean_env(GWTRACE_HOME=str(tmp_path / "f")), "--watch", str(tmp_path / "nope"))
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1 and "no directory" in missing.stderr


def test_a_clean_stop_removes_the_directory_start_made_and_keeps_one_with_spans(tmp_path):
    import re

    receiver = OtlpReceiver().start()
    try:
        for endpoint, kept in ((receiver.endpoint, False), ("http://127.0.0.1:9/v1/traces", True)):
            tmp = tmp_path / ("kept" if kept else "clean")
            tmp.mkdir()
            env = clean_env(TMPDIR=str(tmp), OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=endpoint,
                            GWTRACE_HOME=str(tmp_path / "home"))
            start = subprocess.run([GWTRACE, "sidecar", "start"], env=env, capture_output=True, text=True,
                                   timeout=60)
            assert start.returncode == 0, start.stderr
            directory = re.search(r"GWTRACE_DIR='?([^';]+)", start.stdout).group(1)
            assert Path(directory).parent == tmp
            assert run_bash(spans_script(3), dict(env, GWTRACE_DIR=directory)).returncode == 0
            stop = subprocess.run([GWTRACE, "sidecar", "stop", "--dir", directory], env=env,
                                  capture_output=True, text=True, timeout=120)
            assert stop.returncode == 0, stop.stderr
            assert Path(directory).exists() == kept
            assert ("gwtrace ingest --spool " + directory in stop.stderr) == kept
    finally:
        receiver.stop()


def _client_logs(top: Path, glideins: int, spans: int) -> int:
    """A factory's client log directory: one shipped-home block of SPANS spans per glidein .err."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from gwtrace.wire.blocks import frame

    entry = top / "user_fe" / "glidein_gf" / "entry_E"
    entry.mkdir(parents=True)
    for g in range(glideins):
        request = ExportTraceServiceRequest()
        scope = request.resource_spans.add().scope_spans.add()
        for i in range(spans):
            scope.spans.add(trace_id=g.to_bytes(16, "big"), span_id=(i + 1).to_bytes(8, "big"), name=f"g{g}.s{i}")
        (entry / f"job.{g}.0.err").write_text("glidein stderr\n" + frame("otlp", request.SerializeToString(), spans))
    return glideins * spans


def test_concurrent_ingests_on_one_ledger_send_every_span_exactly_once(tmp_path):
    """A cron one-shot and a --watch --once over the same client logs and ledger
    at the same time, into a slow collector: each span arrives once."""
    import time
    from collections import Counter

    expected = _client_logs(tmp_path / "client", glideins=40, spans=3)
    receiver = OtlpReceiver().start()
    receiver.delay = 0.02
    try:
        env = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.endpoint, GWTRACE_HOME=str(tmp_path / "f"))
        runs = [["ingest", str(tmp_path / "client")],
                ["ingest", "--watch", str(tmp_path / "client"), "--once", "--settle", "0"],
                ["ingest", str(tmp_path / "client")]]
        procs = [subprocess.Popen([GWTRACE, *run], env=env, stderr=subprocess.PIPE, text=True) for run in runs]
        outs = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
        assert [rc for rc, _ in outs] == [0, 0, 0], outs
        time.sleep(0.2)
        counts = Counter((s.trace_id, s.span_id) for s in receiver.spans)
        assert len(counts) == expected and set(counts.values()) == {1}, counts.most_common(3)
        assert receiver.requests == 40
    finally:
        receiver.stop()


def test_a_busy_ledger_is_one_line_exit_0_and_nothing_sent(tmp_path):
    """Past --lock-wait, the second ingest gives up in one line (cron: no failure,
    nothing lost); once the ledger is free, the same command sends everything."""
    import fcntl
    import os

    expected = _client_logs(tmp_path / "client", glideins=2, spans=2)
    ledger = tmp_path / "f" / "ingested.sha256"
    ledger.parent.mkdir()
    receiver = OtlpReceiver().start()
    try:
        env = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.endpoint, GWTRACE_HOME=str(ledger.parent))
        fd = os.open(ledger, os.O_RDWR | os.O_CREAT)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            for args in ([str(tmp_path / "client")], ["--watch", str(tmp_path / "client"), "--once"]):
                busy = ingest(env, "--lock-wait", "0.3", *args)
                assert busy.returncode == 0 and busy.stderr.count("\n") == 1, busy.stderr
                assert "in use by another gwtrace ingest" in busy.stderr and "nothing lost" in busy.stderr
        finally:
            os.close(fd)
        assert receiver.requests == 0
        done = ingest(env, "--watch", str(tmp_path / "client"), "--once", "--settle", "0")
        assert done.returncode == 0, done.stderr
        assert len(receiver.wait_for(expected)) == expected
    finally:
        receiver.stop()


def test_the_factory_xml_in_the_docs_is_the_tested_file():
    """docs/deploy.md shows deploy/gwtrace-factory.xml, the file test_realglidein.py
    builds its factory web area from: the same bytes, and well-formed."""
    import re
    import xml.etree.ElementTree as ET

    from conftest import REPO

    xml = (REPO / "deploy" / "gwtrace-factory.xml").read_text()
    shown = re.findall(r"```xml\n(.*?)```", (REPO / "docs" / "deploy.md").read_text(), re.S)
    assert shown == [xml]
    files = ET.fromstring(xml).findall("./files/file")
    assert [f.get("after_entry") for f in files] == [None, None, None, None]   # main list: early (docs/deploy.md)


def test_the_ingest_unit_restarts_after_a_crash_but_never_loops():
    """deploy/gwtrace-ingest.service: Restart=on-failure, and a start limit the restart delay can reach (5 starts
    30 s apart fit in its interval), so a crash that repeats leaves the unit failed instead of looping."""
    import configparser

    from conftest import REPO

    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment]
    unit.read(REPO / "deploy" / "gwtrace-ingest.service")
    assert unit["Service"]["Restart"] == "on-failure"
    burst = int(unit["Unit"]["StartLimitBurst"])
    interval = int(unit["Unit"]["StartLimitIntervalSec"])
    assert 1 <= burst <= 10 and burst * int(unit["Service"]["RestartSec"]) < interval


def test_ingest_store_names_the_store_the_blocks_go_into(tmp_path):
    """`gwtrace ingest --store FILE job.err` writes into FILE, not the default store (it was
    read for --condor-log only, and the spans silently went to ~/.local/share/gwtrace);
    a --store that cannot be a store is one line, nothing written."""
    from gwtrace.store import TraceStore

    env = clean_env(GWTRACE_HOME=str(tmp_path / "home"), GWTRACE_EXPORT="ship-home")
    err = shipped_home(tmp_path, 12)
    mine = tmp_path / "mine.db"
    out = ingest(env, "--store", str(mine), "--ledger", str(tmp_path / "ledger"), str(err))
    assert out.returncode == 0, out.stderr
    assert f"embedded store {mine}" in out.stderr and "12 span(s)" in out.stderr
    assert not (tmp_path / "home" / "traces.db").exists()
    store = TraceStore(mine, create=False)
    try:
        assert sum(1 for _ in store.find_traces(limit=100)) >= 1
    finally:
        store.close()
    bad = ingest(env, "--store", str(tmp_path), str(err))
    assert bad.returncode == 1 and len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr
