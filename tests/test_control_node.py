"""Issue 32, the node side: a glidein asks the controller once, never for more than 1 s (fake controller on loopback)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, Iterator

import pytest

from conftest import clean_env
from fake_controller import FakeController, closed_port_url
from test_shim_setup import gconfig, glidein, job_environment, result, run_setup, setup_env  # noqa: F401 - a fixture

from gwtrace.sidecar import decide
from gwtrace.wire.sampling import sampled

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


@pytest.fixture
def controller() -> Iterator[FakeController]:
    c = FakeController().start()
    yield c
    c.stop()


def _decide(url: str, tmp_path: Path, cache: "decide.DecisionCache | None" = None,
            **question: str) -> "tuple[decide.Decision, float]":
    begun = time.monotonic()
    got = decide.decide({"subject": "glidein", "site": "Test_Site", "trace_id": TRACE, **question},
                        cache, env={"GWTRACE_CONTROLLER": url})
    return got, time.monotonic() - begun


def test_the_answer_decides_and_is_cached(controller, tmp_path: Path) -> None:
    cache = decide.DecisionCache()
    got, _ = _decide(controller.url, tmp_path, cache)
    assert got.level == "commands" and got.rule == "r12" and got.source == "controller"
    assert got.sampled is sampled(TRACE, 1.0) and got.why == "rule r12: shifter: site X"
    assert controller.decide_bodies()[0] == {"subject": "glidein", "site": "Test_Site", "trace_id": TRACE}
    again, _ = _decide(controller.url, tmp_path, cache)
    assert again._replace(source="controller") == got and again.source == "cache"
    assert len(controller.decide_bodies()) == 1          # the cache answered for its ttl_s


def test_the_node_samples_by_its_own_rule_on_its_own_trace_id(controller, tmp_path: Path) -> None:
    controller.answer = dict(controller.answer, sample_ratio=0.5, sampled=True)    # the flag is not trusted
    low = "0" * 16 + "f" * 16                          # low 64 bits above half: never sampled at 0.5
    got = decide.decide({"subject": "glidein", "trace_id": TRACE[:16] + low[16:]}, None,
                        env={"GWTRACE_CONTROLLER": controller.url})
    assert got.sampled is False and got.ratio == 0.5


@pytest.mark.parametrize("mode,why", [("unreachable", "controller unreachable"), ("hang", "timed out"),
                                      ("slow", "timed out")])
def test_no_answer_within_the_budget_is_the_default_and_why(mode: str, why: str, tmp_path: Path) -> None:
    c = None
    if mode == "unreachable":
        url = closed_port_url()
    else:
        c = FakeController(mode=mode, delay=3.0).start()
        url = c.url
    try:
        got, took = _decide(url, tmp_path)
    finally:
        if c is not None:
            c.stop()
    assert took <= 1.0, took
    assert got.source == "default" and got.why == why and got.level is None and got.rule is None


@pytest.mark.parametrize("answer,why", [({"level": "loud", "rule": "r1"}, "answer has an unknown level"),
                                        ({"level": "off", "rule": "r1", "sample_ratio": 7}, "answer has a bad sample_ratio"),
                                        ([1, 2], "answer is not a JSON object")])
def test_a_bad_answer_is_not_obeyed(answer, why, tmp_path: Path) -> None:
    c = FakeController(answer=answer).start()
    try:
        got, _ = _decide(c.url, tmp_path)
    finally:
        c.stop()
    assert got.source == "default" and got.why == why


def test_no_controller_no_question(tmp_path: Path) -> None:
    got = decide.decide({"subject": "glidein"}, str(tmp_path), env={})
    assert got.source == "default" and got.why == "no controller configured"
    with pytest.raises(decide.AskError):
        decide.controller_base({"GWTRACE_CONTROLLER": "ftp://x"})
    assert decide.controller_base({"GWTRACE_CONTROLLER": "http://h:1/gw/v1/gwtrace/decide"}) == "http://h:1/gw"


# ---- the glidein's set-up (shim/gwtrace_setup.sh) -------------------------------------------------------


def _configure(glidein: Dict[str, Path], endpoint: str, controller: str = "", **more: str) -> None:
    with glidein["config"].open("a") as f:
        f.write(f"GWTRACE_OTLP_TRACES_ENDPOINT {endpoint}\n")
        if controller:
            f.write(f"GWTRACE_CONTROLLER {controller}\n")
        for key, value in more.items():
            f.write(f"{key} {value}\n")


def _finish(glidein: Dict[str, Path]) -> None:
    cleanup = glidein["base"] / ".gwms.d" / "exec" / "cleanup"
    for hook in sorted(cleanup.iterdir()):
        assert subprocess.run([str(hook), str(glidein["config"])], env=clean_env(), timeout=120).returncode == 0


def _timed_setup(glidein: Dict[str, Path]) -> float:
    begun = time.monotonic()
    out = run_setup(glidein, setup_env(OTEL_EXPORTER_OTLP_TIMEOUT="2000"))
    took = time.monotonic() - begun
    assert out.returncode == 0, out.stderr
    assert result(glidein)["GWTrace"] == "on", result(glidein)
    return took


def test_the_glidein_asks_once_and_records_the_decision(glidein, receiver, controller) -> None:  # noqa: F811
    controller.answer = dict(controller.answer, level="functions")
    _configure(glidein, receiver.endpoint, controller.url)
    _timed_setup(glidein)
    body = controller.decide_bodies()
    assert len(body) == 1
    assert body[0] == {"subject": "glidein", "factory": "OSG", "entry": "CMSHTPC_T2_Test", "site": "Test_Site",
                       "glidein_id": "1b0c3f7e-1111-2222-3333-444455556666", "trace_id": TRACE}
    sidecar = Path(gconfig(glidein["config"], "GWTRACE_DIR"))
    assert (sidecar / "level").read_text() == "functions\n"
    assert gconfig(glidein["config"], "TRACEPARENT").endswith("-01")   # the factory's flags, sampled
    _finish(glidein)
    root = {s.name: s for s in receiver.spans}["glidein"]
    assert root.attributes["gwtrace.control.level"] == "functions"
    assert root.attributes["gwtrace.control.rule"] == "r12"
    assert root.attributes["gwtrace.control.source"] == "controller"


def test_an_unsampled_glidein_exports_nothing_and_tells_its_jobs(glidein, receiver, controller) -> None:  # noqa: F811
    controller.answer = dict(controller.answer, sample_ratio=0.0)
    _configure(glidein, receiver.endpoint, controller.url)
    _timed_setup(glidein)
    for key in ("TRACEPARENT", "GWTRACE_GLIDEIN_TRACEPARENT"):
        assert gconfig(glidein["config"], key).endswith("-00"), key
    _finish(glidein)
    assert receiver.spans == []


@pytest.mark.parametrize("mode", ["unreachable", "hang", "slow"])
def test_a_controller_that_does_not_answer_delays_the_set_up_at_most_1_1_s(glidein, receiver, mode,  # noqa: F811
                                                                           tmp_path: Path) -> None:
    """Set-up time with the controller down, hung, or answering in 3 s, against the same set-up without one."""
    c = None if mode == "unreachable" else FakeController(mode=mode, delay=3.0).start()
    url = closed_port_url() if c is None else c.url
    try:
        base = glidein["config"].read_text()
        _configure(glidein, receiver.endpoint, "", GWTRACE_SCRIPTS_LEVEL="steps")
        baseline = _timed_setup(glidein)
        _finish(glidein)
        # the same glidein again, fresh, now with the controller configured
        glidein["config"].write_text(base)
        for leftover in (glidein["base"] / "gwtrace").glob("*"):
            subprocess.run(["rm", "-rf", str(leftover)], check=True)
        _configure(glidein, receiver.endpoint, url, GWTRACE_SCRIPTS_LEVEL="steps")
        took = _timed_setup(glidein)
        _finish(glidein)
    finally:
        if c is not None:
            c.stop()
    print(f"set-up: {baseline:.3f} s without a controller, {took:.3f} s with one {mode}")
    assert "GLIDEIN_SCRIPTS_BASH_ENV" not in (glidein["base"] / "job.err").read_text()   # steps: nothing to say
    assert took - baseline <= 1.1, (baseline, took)
    roots = [s for s in receiver.spans if s.name == "glidein"]
    assert roots[-1].attributes["gwtrace.control.source"] == "default"
    assert roots[-1].attributes["gwtrace.control.reason"] == (
        "controller unreachable" if mode == "unreachable" else "timed out")
    assert roots[-1].attributes["gwtrace.control.level"] == "steps"                 # the factory's default
    assert "gwtrace.control.source" not in roots[0].attributes      # no controller: today's behaviour


def test_the_cache_is_no_file_a_job_could_plant(controller, tmp_path: Path) -> None:
    """Decisions are cached in the sidecar's memory only: a planted cache file decides nothing."""
    (tmp_path / "control").mkdir()
    planted = {"x": {"expires": time.time() + 999, "answer": {"level": "commands", "rule": "mine",
                                                                 "sample_ratio": 1.0, "ttl_s": 999}}}
    (tmp_path / "control" / "decisions.json").write_text(json.dumps(planted))
    controller.answer = dict(controller.answer, level="off", rule="site-admin")
    cache = decide.DecisionCache()
    got, _ = _decide(controller.url, tmp_path, cache)
    assert got.level == "off" and got.rule == "site-admin" and got.source == "controller"
    assert sorted(p.name for p in (tmp_path / "control").iterdir()) == ["decisions.json"]   # nothing written
    assert _decide(controller.url, tmp_path, cache)[0].source == "cache"


def test_glidein_and_job_agree_on_sampling_through_the_real_sidecar(glidein, receiver, controller) -> None:  # noqa: F811
    """The glidein's sidecar answers the job's question (ask.py); the job's TRACEPARENT and an OTel SDK
    inside the job (ParentBased) agree with wire.sampling on the glidein's trace id."""
    _configure(glidein, receiver.endpoint, controller.url)
    _timed_setup(glidein)
    ad = glidein["base"] / ".job.ad"
    ad.write_text('ClusterId = 88\nProcId = 0\nOwner = "carol"\n')
    # run at once: the sidecar answers jobs from "ready" on (test_a_job_started_the_moment_...)
    wrapper = subprocess.run(["sh", str(glidein["main"] / "gwtrace-job-wrapper"), sys.executable, "-c",
                              "import os\n"
                              "from opentelemetry.propagate import extract\n"
                              "from opentelemetry.sdk.trace import TracerProvider\n"
                              "ctx = extract({'traceparent': os.environ['TRACEPARENT']})\n"
                              "span = TracerProvider().get_tracer('job').start_span('work', context=ctx)\n"
                              "print(os.environ['TRACEPARENT'], os.environ.get('GWTRACE_AUTO_LEVEL'),"
                              " span.get_span_context().trace_flags.sampled)\n"],
                             env=dict(job_environment(glidein), _CONDOR_JOB_AD=str(ad), PATH=setup_env()["PATH"]),
                             capture_output=True, text=True, timeout=60)
    assert wrapper.returncode == 0, wrapper.stderr
    tp, level, sdk = wrapper.stdout.split()
    _finish(glidein)
    jobs = [b for b in controller.decide_bodies() if b["subject"] == "job"]
    assert jobs and jobs[0]["owner"] == "carol" and jobs[0]["job_id"] == "88.0" and jobs[0]["trace_id"] == TRACE
    assert jobs[0]["site"] == "Test_Site"
    assert tp.startswith(f"00-{TRACE}-") and tp.endswith("-01") and level == "commands" and sdk == "True"
    job = {s.name: s for s in receiver.spans}["user_job"]
    assert job.attributes["gwtrace.control.source"] in ("controller", "cache")
    assert job.attributes["gwtrace.control.level"] == "commands"


def test_a_trace_id_of_the_glideins_own_carries_the_random_flag(glidein, receiver, controller) -> None:  # noqa: F811
    config = glidein["config"]
    config.write_text("".join(line for line in config.read_text().splitlines(keepends=True)
                              if not line.startswith("GLIDEIN_TRACEPARENT ")))
    _configure(glidein, receiver.endpoint, controller.url)
    _timed_setup(glidein)
    tp = gconfig(config, "TRACEPARENT")
    trace = tp.split("-")[1]
    assert tp.endswith("-03") and gconfig(config, "GWTRACE_GLIDEIN_TRACEPARENT").endswith("-03")
    assert controller.decide_bodies()[0]["trace_id"] == trace
    _finish(glidein)


def test_a_job_started_the_moment_the_sidecar_is_up_asks_the_controller(glidein, receiver, controller) -> None:  # noqa: F811
    """The sidecar answers jobs (``control/asking``) from "ready" on, while its exporter still loads: a job
    wrapper run as soon as the set-up returns gets the controller's decision, within its 1 s, and the
    sidecar enforces that answer on the job's spans once its policy exists (ask.py, ``attach_policy``)."""
    controller.answer = dict(controller.answer, level="functions")
    _configure(glidein, receiver.endpoint, controller.url)
    _timed_setup(glidein)
    asking = Path(gconfig(glidein["config"], "GWTRACE_DIR")) / "control" / "asking"
    assert asking.exists()
    ad = glidein["base"] / ".job.ad"
    ad.write_text('ClusterId = 89\nProcId = 3\nOwner = "dave"\n')
    begun = time.monotonic()
    wrapper = subprocess.run(["sh", str(glidein["main"] / "gwtrace-job-wrapper"), "sh", "-c",
                              'printf "%s %s\\n" "$TRACEPARENT" "$GWTRACE_AUTO_LEVEL"'],
                             env=dict(job_environment(glidein), _CONDOR_JOB_AD=str(ad), PATH=setup_env()["PATH"]),
                             capture_output=True, text=True, timeout=60)
    took = time.monotonic() - begun
    assert wrapper.returncode == 0, wrapper.stderr
    tp, level = wrapper.stdout.split()
    _finish(glidein)
    jobs = [b for b in controller.decide_bodies() if b["subject"] == "job"]
    assert [(b["job_id"], b["owner"]) for b in jobs] == [("89.3", "dave")]
    assert tp.startswith(f"00-{TRACE}-") and level == "functions"
    job = {s.name: s for s in receiver.spans}["user_job"]
    assert job.attributes["gwtrace.control.source"] == "controller"
    assert job.attributes["gwtrace.control.level"] == "functions"
    print(f"job wrapper run at once: {took:.3f} s")
