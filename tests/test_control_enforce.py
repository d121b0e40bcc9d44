"""Issue 32: users cannot override a site admin's off/less: the sidecar enforces what it holds in memory.

A job runs as the pilot's user: it can rewrite the level files, the answers in
``control/ask/``, plant a cache file, set GWTRACE_AUTO_LEVEL and open a channel
of its own in ``jobs/``. None of it gets one more span exported
(sidecar/gwtrace/sidecar/enforce.py; docs/protocol.md, "Trust boundary").
Everything runs for real: ``gwtrace sidecar start --ask-trace-id`` against a
controller on loopback, the job wrapper, an OTLP receiver.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Dict, Iterator, List

import pytest

from conftest import GWTRACE, LIB, REPO, clean_env
from fake_controller import FakeController
from gwtrace.sidecar.enforce import Policy, Verdict, allowed
from gwtrace.wire.events import parse_text

WRAPPER = REPO / "shim" / "gwtrace-job-wrapper"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
ROOT = "00f067aa0ba902b7"
GLIDEIN_ANSWER = {"level": "commands", "sample_ratio": 1.0, "rule": "r1", "reason": "shifter", "ttl_s": 300}
OFF = {"level": "off", "sample_ratio": 1.0, "rule": "r9", "reason": "site admin: off at Test_Site", "ttl_s": 300}


@pytest.fixture
def controller() -> Iterator[FakeController]:
    c = FakeController(answer=dict(GLIDEIN_ANSWER)).start()
    yield c
    c.stop()


started: List[Dict[str, str]] = []


@pytest.fixture(autouse=True)
def _stop_what_started() -> Iterator[None]:
    yield
    while started:
        env = started.pop()
        if Path(env["GWTRACE_DIR"], "sidecar.lock").exists():
            subprocess.run([GWTRACE, "sidecar", "stop", "--dir", env["GWTRACE_DIR"]], env=env,
                           capture_output=True, timeout=90)


def _start(tmp_path: Path, receiver, controller: FakeController) -> Dict[str, str]:
    config = tmp_path / "glidein_config"
    config.write_text("GLIDEIN_Site Test_Site\n")
    env = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.endpoint, GWTRACE_HOME=str(tmp_path / "home"),
                    OTEL_EXPORTER_OTLP_TIMEOUT="2000", GWTRACE_STOP_TIMEOUT="10",
                    GWTRACE_CONTROLLER=controller.url)
    out = subprocess.run([GWTRACE, "sidecar", "start", "--dir", str(tmp_path / "sc"), "--glidein-config",
                          str(config), "--ask-trace-id", TRACE, "--default-level", "", "--default-ratio", "1"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    for name, value in re.findall(r"^export (\w+)=(.*);$", out.stdout, re.M):
        env[name] = value.strip("'")
    env["control"] = out.stdout
    started.append(env)
    # The sidecar answers jobs from "ready" on (ask.py), while its exporter loads: the jobs below run at
    # once, so their answers come before the sidecar's policy exists and are handed to it (attach_policy).
    assert Path(env["GWTRACE_DIR"], "control", "asking").exists()
    return env


def _stop(env: Dict[str, str]) -> Dict[str, str]:
    out = subprocess.run([GWTRACE, "sidecar", "stop", "--dir", env["GWTRACE_DIR"]], env=env,
                         capture_output=True, text=True, timeout=90)
    assert out.returncode == 0, out.stderr
    status = subprocess.run([GWTRACE, "sidecar", "status", "--dir", env["GWTRACE_DIR"]], env=env,
                            capture_output=True, text=True, timeout=30)
    return dict(line.split(": ", 1) for line in status.stdout.splitlines() if ": " in line)


def _glidein_line(env: Dict[str, str], line: str) -> None:
    with open(env["GWTRACE_SOCKET"][len("file://"):], "a") as fh:
        fh.write(line + "\n")


def _begin(span: str, parent: str, name: str, kind: str, ts: str = "1700000000.000001") -> str:
    return f"gw1\tB\t{ts}\t7\t{TRACE}\t{span}\t{parent}\t0\t01\t-\t{name}\tgwtrace.kind={kind}"


def _end(span: str, ts: str = "1700000001.000000") -> str:
    return f"gw1\tE\t{ts}\t7\t{TRACE}\t{span}\t0"


#: What a hostile job does under an `off` decision: every file it can reach says "commands", its own
#: environment too, and it opens the channel the wrapper did not give it and writes spans there.
HOSTILE = r'''
d=$1 span=${TRACEPARENT:36:16}
printf 'commands\n' >"$d/control/jobs-level"; printf 'commands\n' >"$d/control/job-level/88.0"
printf 'commands\n' >"$d/level"
for a in "$d"/control/ask/*.ans; do printf 'commands\t1\tmine\tcontroller\tmine\n' >"$a"; done
printf '{"x": {"expires": 9e9, "answer": {"level": "commands", "rule": "mine", "sample_ratio": 1}}}' \
  >"$d/control/decisions.json"
chan=$d/jobs/%(trace)s-$span.log
printf 'gw1\tB\t1700000000.5\t9\t%(trace)s\t1111111111111111\t%%s\t0\t01\t-\tforged\tgwtrace.kind=script\n' "$span" >>"$chan"
printf 'gw1\tE\t1700000000.6\t9\t%(trace)s\t1111111111111111\t0\n' >>"$chan"
export GWTRACE_AUTO_LEVEL=commands GWTRACE_SOCKET=file://$chan
source "%(lib)s"
trace_begin mine; trace_end 0
echo "level=${GWTRACE_AUTO_LEVEL}"
''' % {"trace": TRACE, "lib": LIB}


def _job(env: Dict[str, str], tmp_path: Path, script: str, *args: str, cluster: int = 88,
         flags: str = "01") -> str:
    ad = tmp_path / f"job{cluster}.ad"
    ad.write_text(f'ClusterId = {cluster}\nProcId = 0\nOwner = "carol"\n')
    job = tmp_path / f"job{cluster}.sh"
    job.write_text(script)
    job_env = {k: v for k, v in env.items() if k != "control"}
    job_env.update(TRACEPARENT=f"00-{TRACE}-{ROOT}-{flags}", _CONDOR_JOB_AD=str(ad), _CONDOR_SCRATCH_DIR=str(tmp_path))
    out = subprocess.run(["sh", str(WRAPPER), "bash", str(job), *args], env=job_env, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_a_hostile_job_under_off_exports_nothing_more(tmp_path: Path, receiver, controller) -> None:
    controller.job_answer = dict(OFF)
    env = _start(tmp_path, receiver, controller)
    _glidein_line(env, _begin(ROOT, "-", "glidein", "glidein"))
    assert _job(env, tmp_path, HOSTILE, env["GWTRACE_DIR"]) == "level=commands\n"
    # The next job's wrapper reads the rewritten level files and gives it a channel at "commands":
    # its controller's answer (off) is what the sidecar enforces.
    nxt = f'source "{LIB}"\ntrace_begin second_job_work\ntrace_end 0\necho "$GWTRACE_AUTO_LEVEL"\n'
    assert _job(env, tmp_path, nxt, cluster=89) == "commands\n"
    _glidein_line(env, _end(ROOT))
    status = _stop(env)
    names = sorted(s.name for s in receiver.wait_for(3, timeout=30))
    assert names == ["glidein", "user_job", "user_job"], names
    assert int(status["spans_dropped_control"]) >= 3, status
    assert len([b for b in controller.decide_bodies() if b["subject"] == "job"]) == 2  # the planted cache: no


def test_a_job_at_scripts_exports_no_function_nor_command_span(tmp_path: Path, receiver, controller) -> None:
    controller.job_answer = dict(OFF, level="scripts", rule="r7")
    env = _start(tmp_path, receiver, controller)
    _glidein_line(env, _begin(ROOT, "-", "glidein", "glidein"))
    script = ('export GWTRACE_AUTO_LEVEL=commands\nc=${GWTRACE_SOCKET#file://} s=${TRACEPARENT:36:16}\n'
              + "".join(f"printf 'gw1\\tB\\t1700000000.5\\t9\\t{TRACE}\\t{sid}\\t%s\\t0\\t01\\t-\\t{kind}_span"
                        f"\\tgwtrace.kind={kind}\\n' \"$s\" >>\"$c\"\n"
                        f"printf 'gw1\\tE\\t1700000000.6\\t9\\t{TRACE}\\t{sid}\\t0\\n' >>\"$c\"\n"
                        for sid, kind in (("1" * 16, "script"), ("2" * 16, "function"), ("3" * 16, "command"))))
    _job(env, tmp_path, script)
    _glidein_line(env, _end(ROOT))
    status = _stop(env)
    names = sorted(s.name for s in receiver.wait_for(3, timeout=30))
    assert names == ["glidein", "script_span", "user_job"], names
    assert status["spans_dropped_control"] == "2", status
    # the job ran the moment the sidecar was up: asked and answered while the exporter loaded
    assert "1 job question(s) answered while the exporter loaded" in Path(env["GWTRACE_DIR"], "sidecar.log").read_text()


def test_the_glidein_off_keeps_only_its_root_whatever_the_level_file_says(tmp_path: Path, receiver,
                                                                          controller) -> None:
    controller.answer = dict(OFF)
    env = _start(tmp_path, receiver, controller)
    assert "gwtrace_control_level=off;" in env["control"]
    Path(env["GWTRACE_DIR"], "level").write_text("commands\n")     # a job's rewrite: the step hook obeys it
    _glidein_line(env, _begin(ROOT, "-", "glidein", "glidein"))
    _glidein_line(env, _begin("5" * 16, ROOT, "a_step", "step"))
    _glidein_line(env, _begin("6" * 16, "5" * 16, "a_function", "function"))
    _glidein_line(env, _begin("7" * 16, ROOT, "glidein", "glidein"))     # a second "root": forged
    for span in ("6" * 16, "5" * 16, "7" * 16, ROOT):
        _glidein_line(env, _end(span))
    status = _stop(env)
    spans = receiver.wait_for(1, timeout=30)
    assert [(s.name, s.span_id) for s in spans] == [("glidein", ROOT)]
    assert status["spans_dropped_control"] == "3", status
    assert status["events_unknown_span"] == "0", status               # the dropped spans' ends went with them


def test_the_glidein_unsampled_exports_none_of_its_scripts(tmp_path: Path, receiver, controller) -> None:
    controller.answer = dict(GLIDEIN_ANSWER, sample_ratio=0.0)
    env = _start(tmp_path, receiver, controller)
    assert "gwtrace_control_sampled=0;" in env["control"]
    _glidein_line(env, _begin(ROOT, "-", "glidein", "glidein"))
    _glidein_line(env, _end(ROOT))
    status = _stop(env)
    assert receiver.spans == [] and status["spans_dropped_control"] == "1", status


def _b(kind: str) -> object:
    return parse_text(_begin("1" * 16, ROOT, "x", kind))


def test_the_policy_rules() -> None:
    assert allowed(Verdict(None, None), "command") and not allowed(Verdict(None, False), "script")
    assert allowed(Verdict("functions", True), "function") and not allowed(Verdict("functions", True), "command")
    assert allowed(Verdict("scripts", True), "run") and not allowed(Verdict("off", True), "script")
    policy = Policy()
    assert not policy.active
    policy.set_glidein("off", True, TRACE)
    assert policy.job("a-b") == Verdict("off", True)                  # a job that never asked: the site's off
    policy.set_job("c-d", "5.0", "commands", True)
    assert policy.job("c-d") == Verdict("commands", True)
    policy.set_level("scripts", None)                                 # the back channel, in this process
    policy.set_job("e-f", "6.0", "commands", True)
    assert policy.job("e-f") == Verdict("scripts", True) and policy.glidein.level == "scripts"
    assert policy.glidein_allows(_b("script")) and not policy.glidein_allows(_b("function"))
    policy.set_level("bogus", "7.0")
    assert "7.0" not in policy.job_levels


def test_a_level_command_changes_what_the_sidecar_enforces_not_only_the_files(tmp_path: Path) -> None:
    from gwtrace.sidecar.commands import CommandRunner

    policy = Policy()
    policy.set_glidein("off", True, TRACE)
    runner = CommandRunner(str(tmp_path), "http://127.0.0.1:9/r", "k", post=lambda url, payload: None,
                           policy=policy)
    runner.handle('[{"id":"c1","op":"level","level":"functions","job":null},'
                  '{"id":"c2","op":"level","level":"off","job":"88.0"}]')
    assert policy.glidein.level == "functions" and policy.jobs_level == "functions"
    policy.set_job("t-s", "88.0", "commands", True)
    assert policy.job("t-s").level == "off"                          # that job's level, as its wrapper reads it
    (tmp_path / "level").write_text("commands\n")                      # a job's rewrite changes nothing here
    assert policy.glidein.level == "functions"


def test_a_job_sampled_under_an_unsampled_glidein_is_one_whole_trace_linked_to_it(tmp_path: Path, receiver,
                                                                                   controller) -> None:
    """The glidein sampled out (ratio 0), the job in (its own rule, ratio 1): nothing of the glidein is
    exported, the job's trace starts at its span (same trace id) with a link to the glidein's context."""
    controller.answer = dict(GLIDEIN_ANSWER, sample_ratio=0.0)
    controller.job_answer = dict(GLIDEIN_ANSWER, rule="r5", reason="carol's job")
    env = _start(tmp_path, receiver, controller)
    _glidein_line(env, _begin(ROOT, "-", "glidein", "glidein"))
    _job(env, tmp_path, f'source "{LIB}"\ntrace_begin analysis\ntrace_end 0\n', flags="00")
    _glidein_line(env, _end(ROOT))
    _stop(env)
    spans = {s.name: s for s in receiver.wait_for(2, timeout=30)}
    assert set(spans) == {"user_job", "analysis"}, spans
    job = spans["user_job"]
    assert job.trace_id == TRACE and job.parent_id == "" and spans["analysis"].parent_id == job.span_id
    links = list(job.proto.links)
    assert [(link.trace_id.hex(), link.span_id.hex()) for link in links] == [(TRACE, ROOT)]
    assert job.attributes["gwtrace.unsampled_parent.traceparent"] == f"00-{TRACE}-{ROOT}-00"
