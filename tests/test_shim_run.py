"""``gwtrace run`` and ``gwtrace span``: transparent wrappers that trace a command.

Run against real sidecars and a real OTLP receiver: exit codes, streams and
signals pass through untouched, the root span carries the command's outcome,
bash children are traced through BASH_ENV (a BASH_ENV the user had still runs),
and non-bash children get TRACEPARENT.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict

import pytest

from conftest import GWTRACE, clean_env
from opentelemetry.proto.trace.v1.trace_pb2 import Status

from gwtrace.cli.run import UsageError, parse_run_args
from gwtrace.cli.span import parse_span_args
from gwtrace.shim.context import incoming_context


def run(args, env: Dict[str, str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run([GWTRACE, *args], env=env, capture_output=True, timeout=90, **kw)


def test_run_arguments_stop_at_the_command() -> None:
    args = parse_run_args(["--name", "n", "--level=scripts", "ls", "--name", "-l"])
    assert args == ("n", "scripts", ["ls", "--name", "-l"])
    assert parse_run_args(["--", "--weird-command"]).command == ["--weird-command"]
    with pytest.raises(UsageError, match="--level must be one of"):
        parse_run_args(["--level", "everything", "ls"])
    with pytest.raises(UsageError, match="no command"):
        parse_run_args(["--name", "x"])
    with pytest.raises(UsageError, match="unknown option"):
        parse_run_args(["--nmae", "x", "ls"])


def test_span_arguments_need_a_name_and_a_separator() -> None:
    args = parse_span_args(["stage-in", "files=3", "--", "cp", "a", "b"])
    assert args == ("stage-in", {"files": "3"}, ["cp", "a", "b"])
    with pytest.raises(UsageError, match="missing '--'"):
        parse_span_args(["stage-in", "cp", "a"])
    with pytest.raises(UsageError, match="not KEY=VALUE"):
        parse_span_args(["stage-in", "oops", "--", "true"])
    with pytest.raises(UsageError, match="no command"):
        parse_span_args(["stage-in", "--"])


def test_incoming_context_rejects_invalid_traceparents() -> None:
    good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    assert incoming_context({"TRACEPARENT": good}).parent_id == "00f067aa0ba902b7"
    for bad in ("", "garbage", good.upper(), "00-" + "0" * 32 + "-00f067aa0ba902b7-01",
                good + "-extra", "ff" + good[2:]):
        assert incoming_context({"TRACEPARENT": bad}) is None


def test_usage_errors_are_one_line_and_run_nothing(tmp_path: Path) -> None:
    out = run(["run", "--level", "all", "touch", str(tmp_path / "x")], clean_env())
    assert out.returncode == 2 and out.stdout == b""
    assert out.stderr.decode().count("\n") == 1 and out.stderr.startswith(b"gwtrace run: ")
    assert not (tmp_path / "x").exists()
    out = run(["span", "name-only"], clean_env())
    assert out.returncode == 2 and out.stderr.startswith(b"gwtrace span: ") and out.stderr.count(b"\n") == 1


def test_exit_code_and_streams_pass_through_untouched(sidecar, receiver) -> None:
    env = sidecar.start()
    payload = bytes(range(256)) * 64
    script = "import sys; d = sys.stdin.buffer.read(); sys.stdout.buffer.write(d); sys.stderr.buffer.write(d[::-1]); sys.exit(42)"
    out = run(["run", "--name", "binary", "--", sys.executable, "-c", script], env, input=payload)
    assert out.returncode == 42
    assert out.stdout == payload and out.stderr == payload[::-1]
    sidecar.stop()
    root = receiver.wait_for(1) and receiver.by_name("binary")
    assert root.status_code == Status.STATUS_CODE_ERROR
    assert root.attributes["process.exit.code"] == 42
    assert root.attributes["process.executable.name"] == os.path.basename(sys.executable)


def test_command_not_found_is_127_with_one_line(sidecar, receiver) -> None:
    env = sidecar.start()
    out = run(["run", "--", "no-such-command-anywhere"], env)
    assert out.returncode == 127
    assert out.stderr == b"gwtrace run: no-such-command-anywhere: command not found\n"
    sidecar.stop()
    span = receiver.wait_for(1)[0]
    assert span.name == "no-such-command-anywhere" and span.attributes["process.exit.code"] == 127


def test_private_sidecar_is_started_flushed_and_removed(tmp_path: Path, receiver) -> None:
    env = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.endpoint, TMPDIR=str(tmp_path),
                    GWTRACE_HOME=str(tmp_path / "home"))
    out = run(["run", "--", "bash", "-c", "f() { echo in-f; }; f"], env)
    assert out.returncode == 0 and out.stdout == b"in-f\n" and out.stderr == b""
    # Everything was exported before `gwtrace run` returned, and its directory is gone.
    names = {s.name for s in receiver.spans}
    assert {"bash", "f"} <= names and "bash -c" not in names   # the root is the script's span
    assert [p for p in tmp_path.iterdir() if p.name.startswith("gwtrace-run.")] == []


def test_sigterm_is_forwarded_waited_for_and_reraised(sidecar, receiver, tmp_path: Path) -> None:
    env = sidecar.start()
    marker = tmp_path / "got-term"
    script = f"trap 'echo term > {marker}; trap - TERM; kill -TERM $$' TERM; echo ready; sleep 30 & wait"
    proc = subprocess.Popen([GWTRACE, "run", "--name", "victim", "--", "bash", "-c", script], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline() == b"ready\n"
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert marker.read_text() == "term\n"                    # the command got it, and died of it
    assert proc.returncode == -signal.SIGTERM                # and so did we
    sidecar.stop()
    receiver.wait_for(2)
    root = receiver.by_name("victim")
    assert root.attributes["process.exit.code"] == 143
    assert root.attributes["process.exit.signal"] == "SIGTERM"


def test_a_command_killed_by_a_signal_kills_us_with_it(sidecar) -> None:
    env = sidecar.start()
    out = run(["run", "--", "bash", "-c", "kill -KILL $$"], env)
    assert out.returncode == -signal.SIGKILL and out.stderr == b""


def test_bash_children_are_traced_and_others_get_traceparent(sidecar, receiver, tmp_path: Path) -> None:
    env = sidecar.start()
    child = tmp_path / "child.sh"
    child.write_text("#!/bin/bash\nhelper() { echo \"python sees $(python3 -c 'import os; print(os.environ[\"TRACEPARENT\"])')\"; }\nhelper\n")
    child.chmod(0o755)
    parent = tmp_path / "parent.sh"
    parent.write_text(f"#!/bin/bash\nstep() {{ {child} arg-never-recorded; }}\nstep\n")
    parent.chmod(0o755)
    out = run(["run", "--name", "tree", "--", str(parent)], env)
    assert out.returncode == 0, out.stderr
    sidecar.stop()
    spans = {s.name: s for s in receiver.wait_for(4)}
    # the root span is parent.sh's own: bash adds its path, opens no second span
    assert set(spans) == {"tree", "step", "child.sh", "helper"}
    assert spans["tree"].attributes["code.file.path"] == str(parent)
    assert spans["step"].parent_id == spans["tree"].span_id
    assert spans["child.sh"].parent_id == spans["step"].span_id
    assert spans["helper"].parent_id == spans["child.sh"].span_id
    assert spans["child.sh"].attributes["code.file.path"] == str(child)
    assert all("arg-never-recorded" not in str(s.attributes) for s in spans.values())
    seen = out.stdout.decode().split()[-1]                   # the python grandchild's TRACEPARENT
    assert seen == f"00-{spans['helper'].trace_id}-{spans['helper'].span_id}-01"


def test_the_users_bash_env_still_runs(sidecar, receiver, tmp_path: Path) -> None:
    user_env = tmp_path / "bashenv.sh"
    user_env.write_text("GREETING=hello\ngreet() { echo \"$GREETING from BASH_ENV, args: $*\"; }\n")
    env = dict(sidecar.start(), BASH_ENV=str(user_env))
    out = run(["run", "--", "bash", "-c", "greet; bash -c greet", "x"], env)
    assert out.stdout == b"hello from BASH_ENV, args: \nhello from BASH_ENV, args: \n", out.stderr
    sidecar.stop()
    names = [s.name for s in receiver.wait_for(5)]
    assert names.count("greet") == 2 and names.count("source bashenv.sh") == 2


def test_the_users_bash_env_keeps_its_stderr_and_runs_without_one(sidecar, receiver, tmp_path: Path) -> None:
    user_env = tmp_path / "bashenv.sh"
    user_env.write_text("echo 'from BASH_ENV' >&2\nGREETING=hello\n")
    env = dict(sidecar.start(), BASH_ENV=str(user_env))
    out = run(["run", "--level", "scripts", "--", "bash", "-c", "echo $GREETING"], env)
    assert (out.stdout, out.stderr) == (b"hello\n", b"from BASH_ENV\n")
    closed = run(["run", "--level", "scripts", "--", "bash", "-c", "bash -c 'echo $GREETING' 2>&-"], env)
    assert (closed.stdout, closed.returncode) == (b"hello\n", 0), closed.stderr


def test_a_running_sidecar_is_reused(sidecar, receiver, tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(sidecar.start(), TMPDIR=str(tmp))
    out = run(["run", "--level", "scripts", "--", "bash", "-c", "echo $GWTRACE_DIR"], env)
    assert out.stdout.decode().strip() == env["GWTRACE_DIR"]
    assert list(tmp.iterdir()) == []                          # no private sidecar was made
    assert sidecar.status()["sidecar"].startswith("running")


def test_span_wraps_one_command_for_any_shell(sidecar, receiver) -> None:
    env = sidecar.start()
    script = ('gwtrace span stage-in files=2 -- sh -c \'echo "tp=$TRACEPARENT"; exit 3\'; echo "rc=$?";'
              ' gwtrace span outer -- dash -c \'gwtrace span inner -- true\'')
    out = subprocess.run(["dash", "-c", script], env=env, capture_output=True, timeout=60)
    lines = out.stdout.decode().splitlines()
    assert lines[1] == "rc=3" and out.stderr == b""
    sidecar.stop()
    spans = {s.name: s for s in receiver.wait_for(3)}
    assert lines[0] == f"tp=00-{spans['stage-in'].trace_id}-{spans['stage-in'].span_id}-01"
    assert spans["stage-in"].attributes["files"] == 2
    assert spans["stage-in"].attributes["process.exit.code"] == 3
    assert spans["inner"].parent_id == spans["outer"].span_id


def test_span_without_a_sidecar_only_runs_the_command() -> None:
    out = run(["span", "x", "--", "sh", "-c", 'echo "${TRACEPARENT:-none}"; exit 5'], clean_env())
    assert out.returncode == 5 and out.stdout == b"none\n" and out.stderr == b""


def test_disabled_tracing_writes_nothing(sidecar) -> None:
    env = dict(sidecar.start(), GWTRACE_DISABLED="1")
    out = run(["run", "--", "bash", "-c", "f() { :; }; f; echo ok"], env)
    assert out.stdout == b"ok\n"
    time.sleep(0.3)
    assert sidecar.status()["events_received"] == "0"


def test_spans_are_named_after_programs_never_after_arguments(tmp_path: Path, receiver) -> None:
    """`bash -c CMD ARG0`: bash's $0 is ARG0, a user's argument (here a
    password): the script span is named after bash, and no span name or
    attribute holds the argument."""
    env = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.endpoint, TMPDIR=str(tmp_path),
                    GWTRACE_HOME=str(tmp_path / "home"))
    out = run(["run", "--", "bash", "-c", "f() { :; }; f", "--password=s3cr3t"], env)
    assert out.returncode == 0 and out.stderr == b""
    spans = receiver.wait_for(2)          # the script's span is the root span (named after bash)
    assert {s.name for s in spans} == {"bash", "f"}
    for span in spans:
        assert "s3cr3t" not in span.name and "s3cr3t" not in repr(span.attributes)
