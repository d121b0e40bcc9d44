"""Issue 32: jobs ask per job through the sidecar (ask.py) and the job wrapper; sampling agrees with an OTel SDK in the job."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, Iterator, List

import pytest

from conftest import REPO
from fake_controller import FakeController
from gwtrace.sidecar.ask import JobAsker, answer_line, parse_request
from gwtrace.sidecar.commands import make_control_dirs
from gwtrace.sidecar.decide import Decision
from gwtrace.sidecar.enforce import Policy, Verdict
from gwtrace.wire.events import parse_line
from gwtrace.wire.sampling import sampled

WRAPPER = REPO / "shim" / "gwtrace-job-wrapper"
#: A glidein trace whose low 64 bits are 0x2000...: sampled at 0.5, not at 0.1.
TRACE = "4bf92f3577b34da6" + "2000000000000000"
GLIDEIN_TP = f"00-{TRACE}-2222222222222222-03"
SDK_JOB = ("import os, sys\n"
           "from opentelemetry import trace\n"
           "from opentelemetry.propagate import extract\n"
           "from opentelemetry.sdk.trace import TracerProvider\n"
           "from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased\n"
           "provider = TracerProvider(sampler=ParentBased(TraceIdRatioBased(float(sys.argv[1]))))\n"
           "ctx = extract({'traceparent': os.environ['TRACEPARENT']})\n"
           "span = provider.get_tracer('job').start_span('work', context=ctx)\n"
           "print(os.environ['TRACEPARENT'], os.environ.get('GWTRACE_AUTO_LEVEL', '-'),"
           " span.get_span_context().trace_flags.sampled)\n")


@pytest.fixture
def node(tmp_path: Path) -> Dict[str, object]:
    d = tmp_path / "sc"
    (d / "jobs").mkdir(parents=True, mode=0o700)
    (d / "events.log").write_text("")
    make_control_dirs(str(d))
    ad = tmp_path / ".job.ad"
    ad.write_text('ClusterId = 88\nProcId = 0\nOwner = "carol"\nGlobalJobId = "s#88.0#1"\n')
    config = tmp_path / "glidein_config"
    config.write_text("GLIDEIN_Site Test_Site\nGLIDEIN_Factory OSG\n")
    boot_us = time.time_ns() // 1000 - int(float(Path("/proc/uptime").read_text().split()[0]) * 1e6)
    env = {"PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "GWTRACE_DIR": str(d),
           "_CONDOR_JOB_AD": str(ad), "GWTRACE_GLIDEIN_TRACEPARENT": GLIDEIN_TP, "GWTRACE_BOOT_US": str(boot_us),
           "_CONDOR_SCRATCH_DIR": str(tmp_path)}
    return {"dir": d, "env": env, "config": config}


def _asker(node: Dict[str, object], url: str) -> JobAsker:
    return JobAsker(str(node["dir"]), str(node["config"]), env={"GWTRACE_CONTROLLER": url}).start()


def _job(node: Dict[str, object], ratio: float = 1.0) -> "tuple[List[str], float]":
    begun = time.monotonic()
    out = subprocess.run(["dash", str(WRAPPER), sys.executable, "-c", SDK_JOB, str(ratio)], env=node["env"],
                         capture_output=True, text=True, timeout=60)
    took = time.monotonic() - begun
    assert out.returncode == 0, out.stderr
    return out.stdout.split(), took


def _job_span_attrs(node: Dict[str, object]) -> Dict[str, object]:
    lines = (node["dir"] / "events.log").read_bytes().splitlines()
    begins = [parse_line(line) for line in lines if parse_line(line).kind == "B"]
    return dict(begins[-1].attributes) if begins else {}


@pytest.fixture
def controller() -> Iterator[FakeController]:
    c = FakeController().start()
    yield c
    c.stop()


@pytest.mark.parametrize("ratio", [0.5, 0.1])
def test_the_job_asks_with_its_owner_and_id_and_follows_the_answer(node, controller, ratio: float) -> None:
    controller.answer = {"level": "commands", "sample_ratio": ratio, "rule": "r7", "reason": "carol debugs",
                         "ttl_s": 60}
    asker = _asker(node, controller.url)
    try:
        (tp, level, sdk_sampled), took = _job(node, ratio)
    finally:
        asker.stop()
    body = controller.decide_bodies()[0]
    assert body == {"subject": "job", "owner": "carol", "job_id": "88.0", "trace_id": TRACE,
                    "site": "Test_Site", "factory": "OSG"}
    expected = sampled(TRACE, ratio)
    assert expected is (ratio == 0.5)
    assert tp.startswith(f"00-{TRACE}-") and tp.endswith("-03" if expected else "-02")   # random flag kept
    assert level == "commands"
    assert sdk_sampled == str(expected)               # the OTel SDK in the job (ParentBased) agrees
    attrs = _job_span_attrs(node)
    if expected:
        assert attrs["gwtrace.control.rule"] == "r7" and attrs["gwtrace.control.source"] == "controller"
        assert attrs["gwtrace.control.level"] == "commands"
    else:
        assert attrs == {}                            # unsampled: no job span at all
    assert took < 2.0


@pytest.mark.parametrize("mode", ["hang", "slow", "no-sidecar"])
def test_a_job_waits_at_most_1_s_for_an_answer(node, mode: str) -> None:
    baseline = min(_job(node)[1] for _ in range(2))        # no controller: no question
    c = FakeController(mode="slow" if mode == "no-sidecar" else mode, delay=3.0).start()
    asker = _asker(node, c.url)
    if mode == "no-sidecar":
        asker.stop()
        (node["dir"] / "control" / "asking").write_text("1\n")     # a sidecar that died saying it asks
    try:
        (tp, level, sdk_sampled), took = _job(node)
    finally:
        asker.stop()
        c.stop()
    print(f"job: {baseline:.3f} s without a controller, {took:.3f} s with one {mode}")
    assert took - baseline <= 1.1, (baseline, took)
    assert tp.endswith("-03") and level == "-" and sdk_sampled == "True"      # the glidein's decision
    attrs = _job_span_attrs(node)
    assert attrs["gwtrace.control.source"] == "default"
    assert attrs["gwtrace.control.reason"] in ("timed out", "no answer within 1 s: the glidein's decision")


def test_the_back_channel_level_wins_for_a_job_started_after_it(node, controller) -> None:
    (node["dir"] / "control" / "job-level" / "88.0").write_text("off\n")
    asker = _asker(node, controller.url)
    try:
        (tp, level, _), _ = _job(node)
    finally:
        asker.stop()
    assert level == "-"                                # off: no level for the job's bash
    attrs = _job_span_attrs(node)
    assert attrs["gwtrace.control.level"] == "off" and attrs["gwtrace.control.source"] == "back-channel"
    assert not list((node["dir"] / "jobs").iterdir())   # no event log of its own: no spans inside


def test_the_wrapper_registers_the_scratch_dir_while_the_job_runs(node, tmp_path: Path) -> None:
    out = subprocess.run(["dash", str(WRAPPER), "cat", str(node["dir"] / "control" / "scratch" / "88.0")],
                         env=node["env"], capture_output=True, text=True, timeout=30)
    assert out.stdout == f"{tmp_path}\n"
    assert not (node["dir"] / "control" / "scratch" / "88.0").exists()


def test_requests_are_checked() -> None:
    assert parse_request(b"88.0\tcarol\t" + TRACE.encode() + b"\n", TRACE) == {
        "subject": "job", "trace_id": TRACE, "job_id": "88.0", "owner": "carol"}
    assert parse_request(b"88.0\tcarol\t" + TRACE.encode(), TRACE) is None            # incomplete
    assert parse_request(b"x\t$(rm -rf)\t" + TRACE.encode() + b"\n", TRACE) == {"subject": "job", "trace_id": TRACE}
    assert parse_request(b"88.0\tcarol\t" + b"0" * 32 + b"\n", TRACE) is None          # another trace
    assert answer_line(Decision(None, None, None, None, "default", "timed out")) == "-\t-\t-\tdefault\ttimed out\n"


def test_what_a_job_plants_in_the_control_directory_never_blocks_nor_is_written_through(node, controller,
                                                                                       tmp_path: Path) -> None:
    ask = node["dir"] / "control" / "ask"
    os.mkfifo(ask / f"{TRACE}-{'1' * 16}.req")                       # a FIFO for a request: never opened blocking
    os.mkfifo(node["dir"] / "control" / "decisions.json")            # and for the cache
    outside = tmp_path / "precious"
    outside.write_text("keep\n")
    (ask / f"{TRACE}-{'2' * 16}.ans").symlink_to(outside)            # an answer path that is a symlink
    (ask / f"{TRACE}-{'2' * 16}.req").write_text(f"88.0\tcarol\t{TRACE}\n")
    asker = JobAsker(str(node["dir"]), None, env={"GWTRACE_CONTROLLER": controller.url})
    begun = time.monotonic()
    assert asker.poll() == 1
    deadline = time.monotonic() + 5
    while (ask / f"{TRACE}-{'2' * 16}.ans").is_symlink() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert time.monotonic() - begun < 2
    assert outside.read_text() == "keep\n"
    assert (ask / f"{TRACE}-{'2' * 16}.ans").read_text().startswith("commands\t1\tr12\tcontroller\t")


def test_answers_given_before_the_policy_exists_are_enforced_once_it_does(node, controller) -> None:
    """The asker starts before "ready", the sidecar's policy a second later (control.py): a job that
    asked meanwhile has its answer enforced, not the glidein's decision."""
    controller.answer = {"level": "scripts", "sample_ratio": 1.0, "rule": "r3", "reason": "carol", "ttl_s": 60}
    asker = _asker(node, controller.url)                      # no policy yet
    try:
        (tp, level, _sdk), _ = _job(node)
        policy = Policy()
        asker.attach_policy(policy)
    finally:
        asker.stop()
    assert level == "scripts"
    channel = f"{TRACE}-{tp.split('-')[2]}"
    assert policy.job(channel) == Verdict("scripts", True)
    assert asker._early == []


def test_a_sampled_job_under_an_unsampled_glidein_starts_its_own_trace_at_its_span(node, controller) -> None:
    """The glidein's decision sampled it out (flags 02: its spans are never exported); the job's says
    sampled. A physicist sees one trace rooted at the job's span (same trace id: the SDK in the job
    agrees), which names the glidein's context it would have hung under; no dangling parent."""
    node["env"]["GWTRACE_GLIDEIN_TRACEPARENT"] = GLIDEIN_TP[:-2] + "02"
    controller.answer = {"level": "scripts", "sample_ratio": 1.0, "rule": "r3", "reason": "carol", "ttl_s": 60}
    asker = _asker(node, controller.url)
    try:
        (tp, level, sdk_sampled), _ = _job(node)
    finally:
        asker.stop()
    assert tp.startswith(f"00-{TRACE}-") and tp.endswith("-03") and sdk_sampled == "True" and level == "scripts"
    begins = [parse_line(line) for line in (node["dir"] / "events.log").read_bytes().splitlines()]
    job = [b for b in begins if b.kind == "B" and b.name == "user_job"][0]
    assert job.parent_id == "" and not job.parent_remote                     # the root of the job's trace
    assert dict(job.attributes)["gwtrace.unsampled_parent.traceparent"] == GLIDEIN_TP[:-2] + "02"
    assert tp.split("-")[2] == job.span_id                                    # the job's spans hang under it


def test_a_job_under_a_sampled_glidein_keeps_its_parent(node, controller) -> None:
    asker = _asker(node, controller.url)
    try:
        _job(node)
    finally:
        asker.stop()
    job = [parse_line(line) for line in (node["dir"] / "events.log").read_bytes().splitlines()][0]
    assert job.parent_id == "2222222222222222" and "gwtrace.unsampled_parent.traceparent" not in dict(job.attributes)
