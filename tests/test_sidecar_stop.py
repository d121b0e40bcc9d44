"""Stopping a sidecar: never a hang, never a lost event, never a changed exit code.

- The SIGTERM handler takes no lock (issue 27: ``Event.set()`` from the
  handler while the main thread sat in ``Event.wait()`` holding that Event's
  lock: the sidecar waited for itself for ever).
- Sidecars stopped at random moments many times all stop
  (GWTRACE_STRESS_STOPS iterations, 300 by default).
- Junk in the event log does not end the stop's reading early, and a
  directory with unread events is never deleted.
- `gwtrace run`'s wait for its private sidecar is bounded.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import GWTRACE, REPO, clean_env

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def test_request_stop_takes_no_lock_a_signal_handler_could_wait_for(tmp_path: Path) -> None:
    """A handler runs in the main thread between two bytecodes, possibly inside a ``with lock:``
    of that thread (Event.wait, the status lock): request_stop must return even then."""
    script = "\n".join([
        "from gwtrace.sidecar.daemon import Sidecar",
        "from gwtrace.sidecar.statedir import Spool",
        "from gwtrace.sidecar.destination import make_delivery",
        "from opentelemetry.sdk.resources import Resource",
        f"sc = Sidecar(Spool({str(tmp_path / 'gw')!r}), make_delivery(), Resource.create({{}}))",
        "held = []",
        "for value in vars(sc).values():   # every lock the sidecar has, held as its main thread may hold it",
        "    lock = getattr(value, '_cond', value)",
        "    if hasattr(lock, 'acquire') and hasattr(lock, 'release'):",
        "        lock.acquire()",
        "        held.append(lock)",
        "sc.request_stop()",
        "print('returned', len(held))",
    ])
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                         env=clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="http://127.0.0.1:9/v1/traces"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("returned"), out.stdout


def test_sidecars_stopped_at_random_moments_all_stop(tmp_path: Path, receiver) -> None:
    """Start, mid-backlog, mid-batch, mid-export, mid-ship: every SIGTERM ends the sidecar."""
    iterations = int(os.environ.get("GWTRACE_STRESS_STOPS", "300"))
    budget = float(os.environ.get("GWTRACE_STRESS_BUDGET_S", "420"))
    results = []
    for endpoint in (receiver.endpoint, "http://127.0.0.1:9/v1/traces"):    # a collector, and one that refuses
        base = tmp_path / ("ok" if endpoint == receiver.endpoint else "refused")
        base.mkdir()
        env = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=endpoint, OTEL_EXPORTER_OTLP_TIMEOUT="2000",
                        GWTRACE_STOP_TIMEOUT="3", GWTRACE_SIDECAR_NICE="0", GWTRACE_HOME=str(tmp_path / "home"))
        out = subprocess.run([sys.executable, str(REPO / "tests" / "stop_stress.py"), "--dir", str(base),
                              "--iterations", str(max(1, iterations // 2)), "--budget-s", str(budget / 2)],
                             env=env, capture_output=True, text=True, timeout=budget + 120)
        assert out.returncode == 0, out.stderr[-3000:]
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    for result in results:
        assert result["hangs"] == [], json.dumps(result["hangs"], indent=1)[:6000]
    assert sum(r["iterations"] for r in results) >= min(iterations, 100), results


def _start(directory: Path, env: dict) -> dict:
    out = subprocess.run([GWTRACE, "sidecar", "start", "--dir", str(directory)], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_junk_before_a_valid_span_is_read_through_at_stop_and_the_span_exported(tmp_path: Path, receiver) -> None:
    """An unterminated line of junk (far over the line limit) then a span: the stop reads on past
    the junk (a step that only skips junk is progress), exports the span, and removes the
    directory only once nothing is left unread."""
    env = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.endpoint, GWTRACE_HOME=str(tmp_path / "home"),
                    GWTRACE_STOP_TIMEOUT="10", TMPDIR=str(tmp_path))
    env.pop("GWTRACE_DIR", None)
    out = subprocess.run([GWTRACE, "sidecar", "start"], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    directory = Path(out.stdout.split("GWTRACE_DIR=")[1].split(";")[0].strip("'"))
    pid = int(out.stdout.split("GWTRACE_SIDECAR_PID=")[1].split(";")[0].strip("'"))
    os.kill(pid, signal.SIGSTOP)            # the junk lands while it does not read: all of it is backlog
    try:
        with open(directory / "events.log", "ab") as f:
            chunk = b"\x00junk" * (1 << 18)    # 1.25 MB, no newline
            for _ in range(48):                # 60 MB
                f.write(chunk)
            f.write(b"\n")
            f.write(f"gw1\tB\t1700000000.000001\t7\t{TRACE}\t00f067aa0ba902b7\t-\t0\t01\t-\tafter_junk\n"
                    f"gw1\tE\t1700000000.000002\t7\t{TRACE}\t00f067aa0ba902b7\t0\n".encode())
    finally:
        os.kill(pid, signal.SIGCONT)
    stop = subprocess.run([GWTRACE, "sidecar", "stop", "--dir", str(directory)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert stop.returncode == 0, stop.stderr
    assert "log_bytes_unread=0" in stop.stdout + stop.stderr, stop.stdout + stop.stderr
    spans = receiver.wait_for(1, timeout=20)
    assert [s.name for s in spans] == ["after_junk"]


def test_a_directory_with_unread_events_is_kept(tmp_path: Path) -> None:
    """`sidecar stop` on a directory that start made: events nobody read keep it."""
    from gwtrace.sidecar import control
    from gwtrace.sidecar.statedir import Spool

    directory = tmp_path / "gw"
    spool = Spool(str(directory))
    Path(spool.path(control.MADE_BY_START)).touch()
    (directory / "events.log").write_bytes(b"gw1\tB\t1700000000.000001\t7\t" + TRACE.encode() + b"\t")
    import io

    out = io.StringIO()
    control._remove_if_done(spool, out)
    assert directory.is_dir()
    assert "not read" in out.getvalue()


def test_gwtrace_runs_wait_for_a_stuck_private_sidecar_is_bounded(tmp_path: Path, monkeypatch) -> None:
    """A private sidecar that never stops (frozen here) is waited for a bounded time, then killed;
    its directory (the event log: nothing lost) is kept and named in one line."""
    from gwtrace.shim import sink as sink_module

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:9/v1/traces")
    for name in ("GWTRACE_DIR", "GWTRACE_SOCKET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(sink_module, "private_stop_timeout", lambda: 2.0)
    sink = sink_module.Sink.acquire(dict(os.environ))
    pid = int(sink.env["GWTRACE_SIDECAR_PID"])
    assert pid > 1 and pid != os.getpid()
    started = time.monotonic()
    try:
        os.kill(pid, signal.SIGSTOP)
        sink.stop()
    finally:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
    assert time.monotonic() - started < 15
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the stuck private sidecar is still alive")
    assert Path(sink.directory, "events.log").exists()


def test_gwtrace_run_keeps_the_commands_status_when_the_sidecar_is_interrupted(tmp_path: Path) -> None:
    """A ^C while the private sidecar flushes: `gwtrace run` still exits with the command's status."""
    script = textwrap.dedent("""
        import sys
        from gwtrace.shim import sink
        from gwtrace.cli.run import main
        def stop(self):
            raise KeyboardInterrupt
        sink.Sink.stop = stop
        sys.exit(main(sys.argv[1:]))
    """)
    env = clean_env(TMPDIR=str(tmp_path), OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="http://127.0.0.1:9/v1/traces")
    out = subprocess.run([sys.executable, "-c", script, "--", "bash", "-c", "exit 3"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 3, out.stderr
    assert "Traceback" not in out.stderr
