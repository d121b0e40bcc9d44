"""Nothing fails silently: a closed or malformed endpoint, an invalid
TRACEPARENT, an event log that cannot be written, a bad command line.

Each gives one line where a person sees it: the stderr of the gwtrace command
they ran, the sidecar's log, ``gwtrace sidecar status``. A traced script's own
stderr is never touched (bats/silence.bats, the transparency corpus).
"""

from __future__ import annotations

import re
import socket
import subprocess
from pathlib import Path
from typing import Dict, List

from conftest import GWTRACE, LIB, Sidecar, clean_env

from gwtrace.cli import describe
from gwtrace.sidecar.control import ControlError
from gwtrace.export.reachability import endpoint_problem


def closed_port() -> int:
    """A local port nobody listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gw(args: List[str], env: Dict[str, str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run([GWTRACE, *args], env=env, capture_output=True, text=True, timeout=120, **kw)


def one_bash_span(env: Dict[str, str]) -> None:
    out = subprocess.run(["bash", "-c", f'source "{LIB}"; trace_begin a; trace_end'], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stderr == ""


def wait_for_status(sc: Sidecar, key: str, timeout_rounds: int = 200) -> Dict[str, str]:
    """Poll ``sidecar status`` until KEY is non-zero (the sidecar writes it about once a second)."""
    import time

    status = sc.status()
    for _ in range(timeout_rounds):
        if status.get(key, "0") != "0":
            return status
        time.sleep(0.05)
        status = sc.status()
    return status


def test_refused_connections_are_counted_logged_once_and_shown_in_status(tmp_path: Path) -> None:
    env = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=f"http://127.0.0.1:{closed_port()}/v1/traces",
                    GWTRACE_HOME=str(tmp_path / "home"), GWTRACE_STOP_TIMEOUT="600")
    sc = Sidecar(tmp_path / "gw", env)
    one_bash_span(sc.start())
    status = wait_for_status(sc, "export_failures")
    assert int(status["export_failures"]) >= 1
    assert status["last_error"] == "connection refused"
    assert status["spans_pending"] == "1"
    stopped = sc.stop()                 # with a 600 s stop timeout: returns only because it gives up at once
    assert stopped.returncode == 0, stopped.stderr
    log = (tmp_path / "gw" / "sidecar.log").read_text()
    warnings = [line for line in log.splitlines() if "WARNING" in line]
    assert sum("cannot deliver" in line and "connection refused" in line for line in warnings) == 1, warnings
    assert any("not waiting for" in line and "1 span(s) stay in" in line for line in warnings), warnings
    assert "Traceback" not in log and "Transient error" not in log


def test_a_malformed_endpoint_is_one_warning_line_at_start(tmp_path: Path) -> None:
    env = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="http//collector:4318", GWTRACE_HOME=str(tmp_path / "h"))
    out = gw(["sidecar", "start", "--dir", str(tmp_path / "gw")], env)
    try:
        assert out.returncode == 0
        assert out.stderr.count("\n") == 1 and out.stderr.startswith("gwtrace: warning: ")
        assert "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT='http//collector:4318'" in out.stderr
    finally:
        gw(["sidecar", "stop", "--dir", str(tmp_path / "gw")], env)
    assert "not an http(s)://host URL" in (tmp_path / "gw" / "sidecar.log").read_text()


def test_endpoint_problems() -> None:
    assert endpoint_problem({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}) is None
    assert endpoint_problem({"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c"}) is None
    assert endpoint_problem({}) is None
    for bad in ("c:4318", "ftp://c/x", "http://", "http://c:99999/", "http//c"):
        assert endpoint_problem({"OTEL_EXPORTER_OTLP_ENDPOINT": bad}), bad


def test_run_with_a_closed_endpoint_does_not_wait_and_says_how_to_send_the_spans(tmp_path: Path, receiver) -> None:
    """gwtrace run with nobody listening: no wait for the stop timeout (600 s
    here: the call's own 120 s limit would fail), one line naming the
    directory and the exact command; that command delivers the spans."""
    env = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=f"http://127.0.0.1:{closed_port()}/v1/traces",
                    GWTRACE_HOME=str(tmp_path / "home"), GWTRACE_STOP_TIMEOUT="600", TMPDIR=str(tmp_path))
    out = gw(["run", "--name", "offline", "--", "bash", "-c", "f() { echo in-f; }; f"], env)
    assert out.returncode == 0 and out.stdout == "in-f\n"
    assert out.stderr.count("\n") == 1, out.stderr
    m = re.fullmatch(r"gwtrace run: 2 span\(s\) not delivered to OTLP/HTTP \S+ \(connection refused\); "
                     r"they are kept in (\S+): send them with: (gwtrace ingest --spool (\S+))\n", out.stderr)
    assert m, out.stderr
    assert m.group(1) == m.group(3) and Path(m.group(1)).parent == tmp_path
    send_env = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.endpoint, GWTRACE_HOME=str(tmp_path / "home"))
    sent = subprocess.run(m.group(2).split(), env=send_env, capture_output=True, text=True, timeout=120)
    assert sent.returncode == 0, sent.stderr
    assert {s.name for s in receiver.wait_for(2)} == {"offline", "f"}     # the script span is the root span


def test_an_invalid_traceparent_is_one_warning_and_a_new_trace(tmp_path: Path) -> None:
    env = clean_env(GWTRACE_DIR=str(tmp_path), TRACEPARENT="00-not-a-valid-context-01")
    out = gw(["span", "s", "--", "true"], env)
    assert out.returncode == 0
    assert out.stderr == ("gwtrace span: warning: ignoring invalid TRACEPARENT 00-not-a-valid-context-01: "
                          "starting a new trace\n")
    begin = (tmp_path / "events.log").read_text().splitlines()[0].split("\t")
    assert begin[1] == "B" and begin[6] == "-"          # a root span of a new trace
    out = gw(["span", "s", "--", "true"], dict(env, TRACEPARENT=""))
    assert out.stderr == ""                              # unset or empty: nothing to say


def test_an_event_log_that_cannot_be_written_is_one_warning(tmp_path: Path) -> None:
    env = clean_env(GWTRACE_SOCKET=f"file://{tmp_path}/missing-dir/events.log")
    out = gw(["span", "s", "k=v", "--", "sh", "-c", "echo out; echo err >&2; exit 3"], env)
    assert out.returncode == 3 and out.stdout == "out\n"
    lines = out.stderr.splitlines()
    assert len(lines) == 2 and lines[1] == "err", lines       # once, though B and E both failed
    assert lines[0].startswith(f"gwtrace span: warning: cannot write the event log {tmp_path}/missing-dir/events.log: ")
    assert lines[0].endswith("; this span is not recorded")


def test_help_prints_help_and_exits_0() -> None:
    for args in (["run", "--help"], ["run", "-h"], ["span", "--help"], ["span", "-h"]):
        out = gw(args, clean_env())
        assert out.returncode == 0 and out.stderr == "", args
        assert out.stdout.startswith(f"usage: gwtrace {args[0]} ") and "--help" in out.stdout
    out = gw(["span", "s", "--", "printf", "%s\\n", "--help"], clean_env())    # CMD's own --help is CMD's
    assert out.returncode == 0 and out.stdout == "--help\n"


def test_cli_errors_are_one_line_without_doubled_prefix_or_internal_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    for args in (["sidecar", "start", "--dir", str(tmp_path / "file" / "sub")],
                 ["sidecar", "start", "--dir", str(tmp_path / "file")],
                 ["sidecar", "status", "--dir", str(tmp_path / "nowhere")]):
        out = gw(args, clean_env(GWTRACE_HOME=str(tmp_path / "h")))
        assert out.returncode == 1, args
        assert out.stderr.count("\n") == 1 and out.stderr.startswith("gwtrace: "), out.stderr
        assert "gwtrace: gwtrace:" not in out.stderr and "internal error" not in out.stderr
        assert "[Errno" not in out.stderr, out.stderr


def test_describe_strips_relayed_prefixes_and_names_internal_errors() -> None:
    from gwtrace.sidecar.statedir import SpoolError

    assert describe(ControlError("gwtrace: sidecar failed to start: boom\n")) == "sidecar failed to start: boom"
    assert describe(SpoolError("another sidecar owns /x")) == "another sidecar owns /x"
    assert describe(FileNotFoundError(2, "No such file or directory", "/x")) == "/x: No such file or directory"
    assert describe(KeyError("k")) == "'k'"
    assert describe(ZeroDivisionError("z")) == "internal error: ZeroDivisionError: z"
