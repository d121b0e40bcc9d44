"""Secrets and trust (issue 28): credentials in URLs, files in GWTRACE_HOME,
the server's Host check, and worker text on a terminal.

Every test here runs on loopback only and bounds its waits.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import GWTRACE, Sidecar, clean_env, run_bash

from gwtrace.export.reachability import endpoint_problem
from gwtrace.wire.redact import REDACTED

SECRET = "hunter2"


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# --- an endpoint URL with user:password@ -------------------------------------------------------

def test_endpoint_credentials_are_never_printed_nor_stored_by_the_sidecar(tmp_path: Path) -> None:
    """``sidecar status``, status.json and sidecar.log show the endpoint without its userinfo."""
    port = _free_port()                                   # nothing listens: delivery fails and says so
    endpoint = f"http://alice:{SECRET}@127.0.0.1:{port}/v1/traces"
    env = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=endpoint, GWTRACE_HOME=str(tmp_path / "home"),
                    GWTRACE_STOP_TIMEOUT="1", OTEL_EXPORTER_OTLP_TIMEOUT="2000")
    sc = Sidecar(tmp_path / "gw", env)
    try:
        run_bash("trace_begin a; trace_end", sc.start())
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and int(sc.status().get("export_failures", "0")) < 1:
            time.sleep(0.1)
        out = subprocess.run([GWTRACE, "sidecar", "status", "--dir", str(sc.dir)], env=sc.env,
                             capture_output=True, text=True, timeout=30)
    finally:
        stop = sc.stop()
    assert out.returncode == 0, out.stderr
    assert f"destination: OTLP/HTTP http://{REDACTED}@127.0.0.1:{port}/v1/traces" in out.stdout
    assert "last_error: connection refused" in out.stdout
    for text in (out.stdout, out.stderr, stop.stdout, stop.stderr, *(p.read_text(errors="replace")
                                                                    for p in sc.dir.iterdir() if p.is_file())):
        assert SECRET not in text and "alice" not in text
    assert f"http://{REDACTED}@127.0.0.1:{port}" in (sc.dir / "sidecar.log").read_text()


def test_endpoint_problems_do_not_show_credentials() -> None:
    problem = endpoint_problem({"OTEL_EXPORTER_OTLP_ENDPOINT": f"ftp://alice:{SECRET}@127.0.0.1/x"})
    assert problem and SECRET not in problem and f"ftp://{REDACTED}@127.0.0.1/x" in problem
    problem = endpoint_problem({"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://alice:{SECRET}@127.0.0.1:99999/"})
    assert problem and SECRET not in problem


def test_ingest_shows_and_records_the_endpoint_without_credentials(tmp_path: Path, receiver) -> None:
    """``gwtrace ingest`` prints its destination and writes it into the ledger (ingested.sha256)."""
    env = clean_env(GWTRACE_HOME=str(tmp_path / "node"), GWTRACE_EXPORT="ship-home", GWTRACE_STOP_TIMEOUT="1")
    sc = Sidecar(tmp_path / "gw", env)
    run_bash("trace_begin a; trace_end", sc.start())
    err_file = tmp_path / "job.1.0.err"
    stop = subprocess.run([GWTRACE, "sidecar", "stop", "--dir", str(sc.dir), "--ship-to", str(err_file)],
                          env=sc.env, capture_output=True, text=True, timeout=120)
    assert stop.returncode == 0, stop.stderr
    home = tmp_path / "factory"
    fenv = clean_env(GWTRACE_HOME=str(home),
                     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.endpoint.replace("http://", f"http://alice:{SECRET}@"))
    out = subprocess.run([GWTRACE, "ingest", str(err_file)], env=fenv, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert len(receiver.wait_for(1)) == 1
    ledger = (home / "ingested.sha256").read_text()
    assert ledger and f"http://{REDACTED}@127.0.0.1" in ledger
    assert SECRET not in out.stdout + out.stderr + ledger


# --- files gwtrace writes in GWTRACE_HOME --------------------------------------------------------

def _ingest(home: Path, *args: str) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([GWTRACE, "ingest", *args], env=clean_env(GWTRACE_HOME=str(home)), capture_output=True,
                          text=True, timeout=120)


def _one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in text and "internal error" not in text, text
    return lines[0]


def _shipped_err_file(tmp_path: Path) -> Path:
    """A job's .err holding one shipped-home block (what ingest reads)."""
    sc = Sidecar(tmp_path / "gw", clean_env(GWTRACE_HOME=str(tmp_path / "node"), GWTRACE_EXPORT="ship-home",
                                            GWTRACE_STOP_TIMEOUT="1"))
    run_bash("trace_begin a; trace_end", sc.start())
    err_file = tmp_path / "job.1.0.err"
    stop = subprocess.run([GWTRACE, "sidecar", "stop", "--dir", str(sc.dir), "--ship-to", str(err_file)],
                          env=sc.env, capture_output=True, text=True, timeout=120)
    assert stop.returncode == 0, stop.stderr
    return err_file


@pytest.mark.parametrize("name", ["traces.db", "ingested.sha256", "traces.db-wal"])
def test_a_symlink_planted_in_gwtrace_home_is_refused_not_followed(tmp_path: Path, name: str) -> None:
    err_file = _shipped_err_file(tmp_path)
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("someone's file\n")
    (home / name).symlink_to(victim)
    out = _ingest(home, str(err_file))
    assert out.returncode != 0
    line = _one_line(out.stderr)
    assert f"{home / name} is a symbolic link" in line and "remove it" in line
    assert victim.read_text() == "someone's file\n"                  # not a database, nothing appended


def test_a_file_of_another_user_in_gwtrace_home_is_refused(tmp_path: Path) -> None:
    err_file = _shipped_err_file(tmp_path)
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    ledger = home / "ingested.sha256"
    ledger.write_text("")
    if os.geteuid() == 0:
        os.chown(ledger, 65534, 65534)                           # nobody's
    else:
        pytest.skip("needs root to give a file to another user")  # CI runs as root
    out = _ingest(home, str(err_file))
    assert out.returncode != 0
    assert f"{ledger} belongs to uid 65534, not you" in _one_line(out.stderr)
    assert ledger.read_text() == ""


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o1777], ids=lambda m: f"{m:04o}")
def test_a_gwtrace_home_writable_by_others_is_refused_with_what_to_fix(tmp_path: Path, mode: int) -> None:
    err_file = _shipped_err_file(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(mode)
    out = _ingest(home, str(err_file))
    assert out.returncode != 0
    line = _one_line(out.stderr)
    assert f"{home} is writable by group or others" in line and f"chmod go-w {home}" in line
    assert list(home.iterdir()) == []                                # nothing written there
    home.chmod(0o700)
    again = _ingest(home, str(err_file))
    assert again.returncode == 0, again.stderr
    assert (home / "traces.db").stat().st_mode & 0o077 == 0


def test_the_sidecar_refuses_an_unsafe_home_at_start(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o777)
    out = subprocess.run([GWTRACE, "sidecar", "start", "--dir", str(tmp_path / "gw")],
                         env=clean_env(GWTRACE_HOME=str(home)), capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and out.stdout == ""
    assert f"{home} is writable by group or others" in _one_line(out.stderr)


# --- the tokenless loopback server and the Host header (DNS rebinding) ----------------------------

SERVE = "import sys; from gwtrace.cli.serve import main; sys.exit(main(sys.argv[1:]))"


class _Serve:
    """A `gwtrace serve` child on a free loopback port (stopped by SIGTERM, waited for)."""

    def __init__(self, tmp_path: Path, *args: str, env: "dict[str, str] | None" = None) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", SERVE, "--port", "0", "--db", str(tmp_path / "s.db"),
                                      *args], stderr=subprocess.PIPE, text=True, env=clean_env(**(env or {})))
        line = self.proc.stderr.readline() if self.proc.stderr else ""
        m = re.search(r"listening on http://\S+:(\d+) ", line)
        if not m:
            self.proc.kill()
            raise AssertionError(f"server did not start: {line}")
        self.port = int(m.group(1))

    def get(self, path: str, host: str, **headers: str) -> "tuple[int, bytes]":
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.putrequest("GET", path, skip_host=True)
            conn.putheader("Host", host)
            for key, value in headers.items():
                conn.putheader(key, value)
            conn.endheaders()
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


def test_tokenless_server_answers_only_loopback_host_names(tmp_path: Path) -> None:
    s = _Serve(tmp_path)
    try:
        p = s.port
        for host in (f"127.0.0.1:{p}", f"localhost:{p}", f"LOCALHOST:{p}", f"[::1]:{p}", "localhost", "127.0.0.5"):
            for path in ("/api/services", "/healthz", "/"):
                assert s.get(path, host)[0] == 200, (host, path)
        for host in (f"evil.example:{p}", "evil.example", f"127.0.0.1.nip.io:{p}", f"localhost.evil.example:{p}",
                     f"[::ffff:7f00:1]x:{p}", "localhost:x", "0.0.0.0", f"10.0.0.1:{p}", ""):
            for path in ("/api/services", "/api/traces/" + "a" * 32, "/", "/v1/traces"):
                status, body = s.get(path, host)
                assert status == 403, (host, path, status)
                assert b"not a loopback name" in body and b"GWTRACE_SERVER_TOKEN" in body and b"\n" not in body
        status, body = s.get("/api/services", f"evil.example:{p}")
        assert json.loads(body)["errors"][0]["msg"].startswith(f"Host evil.example:{p} is not a loopback name")
    finally:
        s.stop()


def test_token_mode_keeps_its_rule_whatever_the_host(tmp_path: Path) -> None:
    """With GWTRACE_SERVER_TOKEN the token decides, as before (docs/server.md)."""
    s = _Serve(tmp_path, env={"GWTRACE_SERVER_TOKEN": "tok-123"})
    try:
        assert s.get("/api/services", "evil.example")[0] == 401
        assert s.get("/api/services", "evil.example", Authorization="Bearer tok-123")[0] == 200
        assert s.get("/api/services", "localhost", Authorization="Bearer tok-123")[0] == 200
    finally:
        s.stop()


# --- worker text on a terminal ----------------------------------------------------------------

#: What a hostile worker puts in a name: retitle the window (OSC ... BEL), clear the screen (CSI 2J).
PWNED = "\x1b]0;PWNED\x07\x1b[2J"
PWNED_SHOWN = "\\x1b]0;PWNED\\x07\\x1b[2J"


def _raw_controls(text: str) -> bool:
    return any(c in text for c in "\x1b\x07\r\x9b\u202e")


def _strings(data: object) -> "list[str]":
    """Every string (key or value) in decoded JSON."""
    if isinstance(data, str):
        return [data]
    if isinstance(data, dict):
        return [s for k, v in data.items() for s in _strings(k) + _strings(v)]
    if isinstance(data, list):
        return [s for v in data for s in _strings(v)]
    return []


def test_printable_escapes_every_control_but_the_line_feed() -> None:
    from gwtrace.cli.terminal import printable

    assert printable(PWNED) == PWNED_SHOWN
    assert printable("a\rb\tc\x00\x7f\x9b\u202eevil\u2066 ok\n") == "a\\rb\\tc\\x00\\x7f\\x9b\\u202eevil\\u2066 ok\n"
    assert printable("plain ünïcödé ✓ 日本\n") == "plain ünïcödé ✓ 日本\n"


def _hostile_store(db: Path) -> None:
    """Glidein records whose site and entry names carry PWNED, some failed, ended in the last hour."""
    from gwtrace.factory.record import GlideinRecord
    from gwtrace.store import TraceStore

    now = int(time.time())
    with TraceStore(db) as store:
        store.put_glidein_records([
            GlideinRecord(factory="f", schedd="s", cluster=i, proc=0, site="S" + PWNED, entry="E" + PWNED,
                          started=now - 4000 + i, ended=now - 100 - i, status="ERROR" if i % 3 == 0 else "OK")
            for i in range(40)])


def _run(main, argv) -> str:
    import io

    out, err = io.StringIO(), io.StringIO()
    assert main(argv, out, err) == 0, err.getvalue()
    assert not _raw_controls(err.getvalue())
    return out.getvalue()


def test_glideins_analyze_and_now_escape_worker_text_in_tables_not_in_json(tmp_path: Path) -> None:
    from gwtrace.cli.analyze import main as analyze
    from gwtrace.cli.glideins import main as glideins
    from gwtrace.cli.now import main as now

    db = tmp_path / "t.db"
    _hostile_store(db)
    for main in (glideins, analyze, now):
        text = _run(main, ["--store", str(db)])
        assert PWNED_SHOWN in text and not _raw_controls(text), main
        exact = json.loads(_run(main, ["--store", str(db), "--format", "json"]))
        assert any(PWNED in text for text in _strings(exact)), main          # JSON: the exact value
    assert PWNED in _run(glideins, ["--store", str(db), "--format", "csv"])    # CSV: data, exact too


def test_show_escapes_span_names_and_statuses(tmp_path: Path) -> None:
    import random

    import synthetic

    from gwtrace.store import TraceStore

    request = synthetic.glidein_trace(random.Random(3), 1_790_000_000 * 10**9, site="S" + PWNED)
    spans = request.resource_spans[0].scope_spans[0].spans
    spans[1].name = "validate" + PWNED
    spans[1].status.message = "failed" + PWNED
    db = tmp_path / "t.db"
    with TraceStore(db) as store:
        store.ingest(request)
    out = subprocess.run([GWTRACE, "show", "--last", "--db", str(db)], env=clean_env(), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "validate" + PWNED_SHOWN in out.stdout and not _raw_controls(out.stdout + out.stderr)


def test_job_escapes_worker_text(tmp_path: Path) -> None:
    import io

    import journey_gen as gen

    from gwtrace.cli.job import main as job
    from gwtrace.journey.ingest import ingest_condor

    t0 = 1_790_000_000
    log = tmp_path / "user.log"
    log.write_text(gen.submitted(5, 0, t0) + gen.held(5, 0, t0 + 60, "disk quota" + PWNED, 34, 0))
    db = tmp_path / "t.db"
    err = io.StringIO()
    assert ingest_condor([str(log)], [], "submit.example.org", str(db), err) == 0, err.getvalue()
    out = io.StringIO()
    assert job(["5.0", "--why", "--store", str(db), "--now", str(t0 + 120)], out) == 0
    assert "disk quota" + PWNED_SHOWN in out.getvalue() and not _raw_controls(out.getvalue())
    exact = io.StringIO()
    assert job(["5.0", "--why", "--store", str(db), "--now", str(t0 + 120), "--format", "json"], exact) == 0
    assert any("disk quota" + PWNED in text for text in _strings(json.loads(exact.getvalue())))
