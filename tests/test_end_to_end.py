"""bash -> event log -> sidecar -> OTLP/HTTP, decoded with opentelemetry-proto."""

import os
import subprocess
import sys
from pathlib import Path

from conftest import GWTRACE, LIB, Sidecar, clean_env, run_bash

from opentelemetry.proto.trace.v1.trace_pb2 import Status

DATA = Path(__file__).parent / "data"

CONTRACT_SCRIPT = """
set -euo pipefail
trace_begin validate_node site=FNAL cores=8
  trace_run check_disk df -h /tmp >/dev/null
  trace_event "disk ok" free_gb=120
  trace_attr node.kind=worker
trace_end
"""


def test_the_contract_script_arrives_as_a_nested_trace(sidecar, receiver):
    env = sidecar.start()
    out = run_bash(CONTRACT_SCRIPT, env)
    assert out.returncode == 0 and out.stdout == "" and out.stderr == ""
    sidecar.stop()
    spans = receiver.wait_for(2)
    assert len(spans) == 2
    outer, inner = receiver.by_name("validate_node"), receiver.by_name("check_disk")
    assert outer.trace_id == inner.trace_id and len(outer.trace_id) == 32
    assert inner.parent_id == outer.span_id and outer.parent_id == ""
    assert outer.attributes["site"] == "FNAL" and outer.attributes["cores"] == 8
    assert outer.attributes["node.kind"] == "worker"
    assert outer.events[0][0] == "disk ok" and outer.events[0][2] == {"free_gb": 120}
    assert outer.start_ns <= inner.start_ns <= inner.end_ns <= outer.end_ns
    assert outer.start_ns <= outer.events[0][1] <= outer.end_ns
    assert inner.attributes["process.executable.name"] == "df"
    assert outer.status_code == Status.STATUS_CODE_OK and inner.status_code == Status.STATUS_CODE_OK
    assert outer.resource["service.name"] == "glidein" and outer.resource["host.name"]
    assert outer.scope == "gwtrace.bash"


def test_failures_become_error_status_with_the_exit_code(sidecar, receiver):
    env = sidecar.start()
    out = run_bash("""
trace_begin job
  trace_run bad sh -c 'exit 3'; echo "rc=$?"
  trace_begin explicit; trace_end "disk full"
  trace_begin word; trace_end error
false
trace_end
echo "after=$?"
""", env)
    assert out.stdout == "rc=3\nafter=1\n", out.stderr
    sidecar.stop()
    receiver.wait_for(4)
    bad, job = receiver.by_name("bad"), receiver.by_name("job")
    assert bad.status_code == Status.STATUS_CODE_ERROR and bad.attributes["process.exit.code"] == 3
    assert job.status_code == Status.STATUS_CODE_ERROR and job.attributes["process.exit.code"] == 1
    assert receiver.by_name("explicit").status_message == "disk full"
    assert receiver.by_name("word").status_code == Status.STATUS_CODE_ERROR


def test_values_arrive_intact(sidecar, receiver):
    env = sidecar.start()
    value = "a b=c 'q' \"dq\"\ttab\nnewline\r\\back é✓ $HOME *"
    env2 = dict(env, VALUE=value)
    out = run_bash('trace_begin "name with\ttab" "v=$VALUE"; trace_event "ev\nx" "w=$VALUE"; trace_end', env2)
    assert out.returncode == 0
    sidecar.stop()
    (span,) = receiver.wait_for(1)
    assert span.name == "name with\ttab"
    assert span.attributes["v"] == value
    assert span.events[0][0] == "ev\nx" and span.events[0][2]["w"] == value


def test_spans_join_an_incoming_traceparent_and_children_continue_it(sidecar, receiver):
    parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    env = dict(sidecar.start(), TRACEPARENT=parent, TRACESTATE="rojo=00f067aa0ba902b7")
    child = f"{sys.executable} -c 'import os; print(os.environ[\"TRACEPARENT\"], os.environ[\"TRACESTATE\"])'"
    out = run_bash(f"trace_begin glidein; {child}; trace_end; echo $TRACEPARENT", env)
    sidecar.stop()
    (span,) = receiver.wait_for(1)
    assert span.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert span.parent_id == "00f067aa0ba902b7"
    assert span.trace_state == "rojo=00f067aa0ba902b7"
    assert span.flags & 0x300 == 0x300        # parent is remote
    seen, restored = out.stdout.splitlines()
    assert seen == f"00-{span.trace_id}-{span.span_id}-01 rojo=00f067aa0ba902b7"
    assert restored == parent


def test_invalid_traceparent_starts_a_new_trace(sidecar, receiver):
    env = dict(sidecar.start(), TRACEPARENT="00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01")
    run_bash("trace_begin x; trace_end", env)
    sidecar.stop()
    (span,) = receiver.wait_for(1)
    assert span.parent_id == "" and span.trace_id != "4bf92f3577b34da6a3ce929d0e0e4736"


def test_unsampled_parent_records_nothing_but_propagates(sidecar, receiver):
    env = dict(sidecar.start(), TRACEPARENT="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
    out = run_bash("trace_begin x; echo $TRACEPARENT; trace_end", env)
    sidecar.stop()
    assert out.stdout.startswith("00-4bf92f3577b34da6a3ce929d0e0e4736-") and out.stdout.strip().endswith("-00")
    assert receiver.spans == []


def test_glidein_identity_and_otel_resource_variables(sidecar, receiver):
    sidecar.env.update(OTEL_RESOURCE_ATTRIBUTES="deployment.environment=test,glidein.site=Override")
    out = subprocess.run([GWTRACE, "sidecar", "start", "--dir", str(sidecar.dir),
                          "--glidein-config", str(DATA / "glidein_config")],
                         env=sidecar.env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    env = dict(sidecar.env)
    for line in out.stdout.splitlines():
        name, value = line[len("export "):].rstrip(";").split("=", 1)
        env[name] = value.strip("'")
    sidecar.pid = int(env["GWTRACE_SIDECAR_PID"])
    run_bash("trace_begin x; trace_end", env)
    sidecar.stop()
    (span,) = receiver.wait_for(1)
    r = span.resource
    assert r["glidein.uuid"] == "3ce9dfca-0e7f-4d69-bfc9-5f58cb266ab7" == r["service.instance.id"]
    assert r["glidein.entry"] == "CMSHTPC_T2_AT_Vienna_ce-1" and r["glidein.factory"] == "OSG"
    assert r["glidein.cpus"] == 8 and r["glidein.memory_mb"] == 20000
    assert r["glidein.cluster_id"] == 10176593 and r["glidein.proc_id"] == 0
    assert r["glidein.client"] == "CMSG-v1_0.main-token"
    assert r["glidein.site"] == "Override"            # explicit OTEL_RESOURCE_ATTRIBUTES wins
    assert r["deployment.environment"] == "test"


def test_service_name_variable(sidecar, receiver):
    sidecar.env["OTEL_SERVICE_NAME"] = "cms-pilot"
    env = sidecar.start()
    run_bash("trace_begin x; trace_end", env)
    sidecar.stop()
    assert receiver.wait_for(1)[0].resource["service.name"] == "cms-pilot"


def test_embedded_default_store_and_show(tmp_path):
    env = clean_env(GWTRACE_HOME=str(tmp_path / "home"))
    start = subprocess.run([GWTRACE, "sidecar", "start", "--dir", str(tmp_path / "gw")], env=env,
                           capture_output=True, text=True, timeout=60)
    assert start.returncode == 0, start.stderr
    script = f'eval "{start.stdout}"; source "{LIB}"\n' + CONTRACT_SCRIPT + "\ngwtrace sidecar stop\n"
    out = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "spans_exported=2" in out.stderr
    show = subprocess.run([GWTRACE, "show", "--last"], env=env, capture_output=True, text=True, timeout=60)
    assert show.returncode == 0, show.stderr
    lines = show.stdout.splitlines()
    assert lines[0].startswith("trace ") and "service=glidein" in lines[0]
    assert lines[1].startswith("validate_node  ") and lines[1].endswith("  OK")
    assert lines[2].startswith("  check_disk  ")
    assert (tmp_path / "home" / "traces.db").exists()


def test_open_spans_are_ended_incomplete_at_stop(sidecar, receiver):
    env = sidecar.start()
    run_bash("trace_begin never_ended; trace_begin inner; trace_event started", env)
    sidecar.stop()
    spans = receiver.wait_for(2)
    assert {s.name for s in spans} == {"never_ended", "inner"}
    for s in spans:
        assert s.status_code == Status.STATUS_CODE_ERROR and s.attributes["gwtrace.incomplete"] is True
    assert receiver.by_name("inner").events[0][0] == "started"


def _nice(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[16])


def test_the_sidecar_yields_the_cpu_to_the_payload(sidecar, tmp_path):
    env = sidecar.start()
    assert _nice(int(env["GWTRACE_SIDECAR_PID"])) == _nice(os.getpid()) + 10
    sidecar.stop()
    kept = Sidecar(tmp_path / "kept", dict(sidecar.env, GWTRACE_SIDECAR_NICE="0"))
    env = kept.start()
    assert _nice(int(env["GWTRACE_SIDECAR_PID"])) == _nice(os.getpid())
    kept.stop()


def test_status_counts_everything_and_prints_zero_as_zero(sidecar, receiver):
    env = sidecar.start()
    run_bash("for i in 1 2 3; do trace_begin s$i; trace_end; done", env)
    with open(sidecar.dir / "events.log", "ab") as f:
        f.write(b"garbage\n")
    receiver.wait_for(3)
    out = sidecar.stop()
    assert "events_received=6" in out.stderr and "events_malformed=1" in out.stderr
    st = sidecar.status()
    assert st["sidecar"] == "not running"
    assert st["spans_exported"] == "3" and st["spans_dropped"] == "0" and st["spans_pending"] == "0"


def test_cli_errors_are_one_clear_line(tmp_path):
    env = clean_env(GWTRACE_HOME=str(tmp_path / "home"))
    for argv in (["sidecar", "status"], ["sidecar", "stop"], ["show", "--last"],
                 ["sidecar", "status", "--dir", str(tmp_path / "missing")]):
        out = subprocess.run([GWTRACE, *argv], env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 1, argv
        assert out.stderr.count("\n") == 1 and out.stderr.startswith("gwtrace: "), out.stderr
        assert "Traceback" not in out.stderr


def test_lib_prints_the_library_path():
    out = subprocess.run([GWTRACE, "lib"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    assert Path(out.stdout.strip()).read_bytes() == LIB.read_bytes()
