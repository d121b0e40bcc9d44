"""A user job cannot forge or end the glidein's spans (issue 27 §2).

The job wrapper hands the job an event log of its own (``jobs/TRACE-SPAN.log``
in the sidecar's state directory); the sidecar takes from it only spans under
the job's span (sidecar/gwtrace/sidecar/channels.py, docs/protocol.md "Trust
boundary"). Everything runs for real: a sidecar, the wrapper, the library in
the job, an OTLP receiver.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from opentelemetry.proto.trace.v1.trace_pb2 import Status

from conftest import LIB, REPO

WRAPPER = REPO / "shim" / "gwtrace-job-wrapper"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
GLIDEIN = "00f067aa0ba902b7"


def _append(path: str, line: str) -> None:
    with open(path, "a") as f:
        f.write(line + "\n")


def test_a_job_can_neither_end_nor_annotate_the_glidein_span_but_adds_its_own(sidecar, receiver, tmp_path: Path):
    env = sidecar.start()
    log = env["GWTRACE_SOCKET"][len("file://"):]
    _append(log, f"gw1\tB\t1700000000.000001\t7\t{TRACE}\t{GLIDEIN}\t-\t0\t01\t-\tglidein")
    job = tmp_path / "job.sh"
    job.write_text(
        # the forgeries: the glidein span's end and an attribute on it, then one on the job span itself
        f'printf "gw1\\tE\\t1700000001.000000\\t9\\t{TRACE}\\t{GLIDEIN}\\terror:forged by user job\\n"'
        ' >>"${GWTRACE_SOCKET#file://}"\n'
        f'printf "gw1\\tA\\t1700000001.000000\\t9\\t{TRACE}\\t{GLIDEIN}\\tglidein.site=forged\\n"'
        ' >>"${GWTRACE_SOCKET#file://}"\n'
        'job_span=${TRACEPARENT:36:16}\n'
        f'printf "gw1\\tE\\t1700000001.000000\\t9\\t{TRACE}\\t%s\\t1\\n" "$job_span" >>"${{GWTRACE_SOCKET#file://}}"\n'
        # what a job may do: spans of its own, under its span
        f'source "{LIB}"\n'
        'trace_begin stage_in files=3\ntrace_begin fetch\ntrace_end 0\ntrace_end 0\n'
        'echo "dir=${GWTRACE_DIR-unset}"\n')
    env_job = dict(env, TRACEPARENT=f"00-{TRACE}-{GLIDEIN}-01")
    out = subprocess.run(["sh", str(WRAPPER), "bash", str(job)], env=env_job, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "dir=unset\n"                 # the job is not told where the glidein's log is
    _append(log, f"gw1\tE\t1700000002.000000\t7\t{TRACE}\t{GLIDEIN}\t0")
    stop = sidecar.stop()
    assert stop.returncode == 0, stop.stderr
    spans = {s.name: s for s in receiver.wait_for(4, timeout=30)}
    assert set(spans) == {"glidein", "user_job", "stage_in", "fetch"}, spans
    glidein = spans["glidein"]
    assert glidein.status_code != Status.STATUS_CODE_ERROR and glidein.end_ns == 1700000002 * 10**9
    assert "glidein.site" not in glidein.attributes
    job = spans["user_job"]
    assert job.parent_id == GLIDEIN and job.status_code != Status.STATUS_CODE_ERROR
    assert spans["stage_in"].parent_id == job.span_id and spans["fetch"].parent_id == spans["stage_in"].span_id
    status = sidecar_status(sidecar)
    assert status["events_rejected_job"] == "3", status
    # the job's spans belong to the job (issue 30): their own service name, the glidein's identity kept
    assert glidein.resource["service.name"] == "glidein"
    for name in ("user_job", "stage_in", "fetch"):
        assert spans[name].resource["service.name"] == "user-job", name
        assert "gwtrace.service.name" not in spans[name].attributes
    assert {k: v for k, v in spans["fetch"].resource.items() if k != "service.name"} == \
        {k: v for k, v in glidein.resource.items() if k != "service.name"}


def test_the_job_service_name_is_settable(sidecar, receiver, tmp_path: Path):
    sidecar.env["GWTRACE_JOB_SERVICE_NAME"] = "mu2e-analysis"
    env = sidecar.start()
    job = tmp_path / "job.sh"
    job.write_text(f'source "{LIB}"\ntrace_begin stage_in\ntrace_end 0\n')
    out = subprocess.run(["sh", str(WRAPPER), "bash", str(job)], env=dict(env, TRACEPARENT=f"00-{TRACE}-{GLIDEIN}-01"),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert sidecar.stop().returncode == 0
    spans = {s.name: s for s in receiver.wait_for(2, timeout=30)}
    assert {n: s.resource["service.name"] for n, s in spans.items()} == {"user_job": "mu2e-analysis",
                                                                          "stage_in": "mu2e-analysis"}


def sidecar_status(sidecar) -> dict:
    return sidecar.status()


def test_a_job_log_is_read_from_its_checkpoint_after_a_sidecar_kill(sidecar, receiver, tmp_path: Path):
    """Its offset and the spans it began survive a SIGKILL: nothing twice, nothing lost."""
    env = sidecar.start()
    jobs = Path(env["GWTRACE_DIR"]) / "jobs"
    root = "1111111111111111"
    chan = jobs / f"{TRACE}-{root}.log"
    _append(str(chan), f"gw1\tB\t1700000000.000001\t9\t{TRACE}\t2222222222222222\t{root}\t0\t01\t-\tfirst")
    _append(str(chan), f"gw1\tE\t1700000000.000002\t9\t{TRACE}\t2222222222222222\t0")
    _append(str(chan), f"gw1\tB\t1700000000.000003\t9\t{TRACE}\t3333333333333333\t{root}\t0\t01\t-\tsecond")
    receiver.wait_for(1, timeout=20)
    import time

    time.sleep(1.0)                                     # a checkpoint after the job's lines
    sidecar.kill()
    _append(str(chan), f"gw1\tE\t1700000000.000004\t9\t{TRACE}\t3333333333333333\t0")
    sidecar.start()
    stop = sidecar.stop()
    assert stop.returncode == 0, stop.stderr
    spans = receiver.wait_for(2, timeout=20)
    assert sorted(s.name for s in spans) == ["first", "second"]
    assert all(s.parent_id == root for s in spans)
