"""Issue 32 end to end with the real parts: a real ``gwtrace serve`` (controller on, a token issuer on
loopback, the pilots' token), the real set-up script and its sidecar, the real job wrapper.

A rule set with ``gwtrace control set`` decides the glidein's level and sampling (seen on the root span
in serve's store); ``gwtrace control level KEY LEVEL`` mid-run is seen by the next script; ``gwtrace
control tail`` returns a running job's file, redacted, to its owner and to nobody else's token.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest
import requests

from conftest import GWTRACE, clean_env
from control_issuer import AUDIENCE, ROLE_MAP, Issuer
from test_shim_setup import gconfig, glidein, job_environment, result, run_setup, setup_env  # noqa: F401 - a fixture

SERVE = "import sys; from gwtrace.cli.serve import main; sys.exit(main(sys.argv[1:]))"
PILOT = "pilot-secret"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
KEY = "1b0c3f7e-1111-2222-3333-444455556666"        # the fixture's GLIDEIN_UUID: the glidein's live key


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Dict[str, Any]]:
    issuer = Issuer()
    roles = tmp_path / "roles.json"
    roles.write_text(json.dumps(ROLE_MAP))
    proc = subprocess.Popen([sys.executable, "-c", SERVE, "--port", "0", "--db", str(tmp_path / "srv.db"),
                             "--control-issuer", issuer.url, "--control-audience", AUDIENCE,
                             "--control-roles", str(roles)],
                            stderr=subprocess.PIPE, text=True, env=dict(clean_env(), GWTRACE_SERVER_TOKEN=PILOT))
    try:
        m = re.search(r"listening on (http://\S+) ", proc.stderr.readline())
        assert m
        yield {"url": m.group(1), "issuer": issuer}
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        issuer.close()


def _control(serve: Dict[str, Any], who: str, *argv: str, groups: "List[str] | None" = None,
             timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(clean_env(), BEARER_TOKEN=serve["issuer"].token(who, groups=groups))
    return subprocess.run([GWTRACE, "control", "--server", serve["url"], *argv], env=env, capture_output=True,
                          text=True, timeout=timeout)


def _step(glidein: Dict[str, Path], name: str) -> None:
    hook = str(glidein["main"] / "error_augment.sh")
    for args in (["-init"], ["-process", "0", f"main/{name}", str(glidein["base"]), "cmd", "1", "2"]):
        assert subprocess.run([hook, *args], cwd=glidein["base"], env=clean_env(), timeout=30).returncode == 0


def _wait_level(level_file: Path, level: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if level_file.exists() and level_file.read_text() == level + "\n":
            return
        time.sleep(0.05)
    raise AssertionError(f"the level file never said {level}")


def _spans(serve: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """The trace's spans in serve's store (its Jaeger API), by operation name, tags as a dict."""
    answer = requests.get(f"{serve['url']}/api/traces/{TRACE}", headers={"Authorization": f"Bearer {PILOT}"},
                          timeout=10)
    assert answer.status_code == 200, answer.text
    return {s["operationName"]: {t["key"]: t["value"] for t in s["tags"]} for s in answer.json()["data"][0]["spans"]}


def test_a_rule_a_level_and_a_tail_through_a_real_serve(glidein, serve, tmp_path: Path) -> None:  # noqa: F811
    admin = ["/vo/admins"]
    done = _control(serve, "ada", "set", "site=Test_Site", "--level", "functions", "--ratio", "1",
                    "--reason", "shifter: detail at Test_Site", groups=admin)
    assert done.returncode == 0 and "by ada (admin)" in done.stdout, done.stderr
    with glidein["config"].open("a") as f:
        f.write(f"GWTRACE_OTLP_TRACES_ENDPOINT {serve['url']}/v1/traces\nGWTRACE_CONTROLLER {serve['url']}\n"
                f"GWTRACE_OTLP_HEADERS Authorization=Bearer {PILOT}\n")
    out = run_setup(glidein, setup_env(OTEL_EXPORTER_OTLP_TIMEOUT="5000", GWTRACE_SNAPSHOT_INTERVAL="0.2",
                                       GWTRACE_SNAPSHOT_ENDPOINT=serve["url"] + "/v1/gwtrace/snapshot"))
    assert out.returncode == 0 and result(glidein)["GWTrace"] == "on", out.stderr
    level_file = Path(gconfig(glidein["config"], "GWTRACE_DIR")) / "level"
    assert level_file.read_text() == "functions\n"                        # the rule decided
    try:
        _run(glidein, serve, tmp_path, level_file, admin)
    finally:
        for hook in sorted((glidein["base"] / ".gwms.d" / "exec" / "cleanup").iterdir()):
            subprocess.run([str(hook), str(glidein["config"])], env=clean_env(), timeout=120)
    _check_store(serve, admin)


def _until_ok(serve: Dict[str, Any], who: str, *argv: str, groups: "List[str] | None" = None) -> str:
    """A control command retried until serve has the glidein's first snapshot (the back channel rides them)."""
    deadline = time.monotonic() + 60
    while True:
        done = _control(serve, who, *argv, groups=groups)
        if done.returncode == 0 or time.monotonic() > deadline or "no live glidein" not in done.stderr:
            assert done.returncode == 0, done.stderr
            return done.stdout
        time.sleep(0.2)


def _run(glidein: Dict[str, Path], serve: Dict[str, Any], tmp_path: Path, level_file: Path,
         admin: List[str]) -> None:
    _step(glidein, "before.sh")
    _until_ok(serve, "ada", "level", KEY, "off", groups=admin)
    _wait_level(level_file, "off")
    _step(glidein, "while_off.sh")
    assert _control(serve, "ada", "level", KEY, "functions", groups=admin).returncode == 0
    _wait_level(level_file, "functions")
    _step(glidein, "after.sh")

    # a running job of carol's: its stderr, with a secret in it, asked for by carol and by bob
    scratch = tmp_path / "execute" / "dir_88"
    scratch.mkdir(parents=True)
    (scratch / "_condor_stderr").write_text("step 1 ok\nexport TOKEN=abc123\nstep 2 failed\n")
    ad = tmp_path / "job.ad"
    ad.write_text('ClusterId = 88\nProcId = 0\nOwner = "carol"\n')
    go = tmp_path / "go"
    job = subprocess.Popen(["sh", str(glidein["main"] / "gwtrace-job-wrapper"), "sh", "-c",
                            f'i=0; while [ ! -e {go} ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done'],
                           env=dict(job_environment(glidein), _CONDOR_JOB_AD=str(ad), _CONDOR_SCRATCH_DIR=str(scratch),
                                    PATH=setup_env()["PATH"]))
    try:
        tail: "subprocess.CompletedProcess | None" = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:            # until a snapshot shows the job (its owner) to serve
            tail = _control(serve, "carol", "tail", KEY, "88.0", "_condor_stderr", "--wait", "30")
            if tail.returncode == 0:
                break
            time.sleep(0.3)
        assert tail is not None and tail.returncode == 0, tail.stderr if tail else None
        assert tail.stdout == "step 1 ok\n[REDACTED]\nstep 2 failed\n"
        refused = _control(serve, "bob", "tail", KEY, "88.0", "_condor_stderr", "--wait", "5")
        assert refused.returncode == 1 and "403" in refused.stderr and "step 1" not in refused.stdout
    finally:
        go.touch()
        assert job.wait(timeout=60) == 0


def _check_store(serve: Dict[str, Any], admin: List[str]) -> None:
    spans: Dict[str, Dict[str, Any]] = {}
    deadline = time.monotonic() + 30
    while "glidein" not in spans and time.monotonic() < deadline:
        time.sleep(0.2)
        try:
            spans = _spans(serve)
        except (AssertionError, IndexError, KeyError):
            spans = {}
    root = spans["glidein"]
    assert root["gwtrace.control.level"] == "functions" and root["gwtrace.control.rule"] == "r1"
    assert root["gwtrace.control.source"] == "controller" and root["gwtrace.control.sampled"] in (True, "true")
    assert "shifter: detail at Test_Site" in root["gwtrace.control.reason"]
    assert {"main/before.sh", "main/after.sh", "user_job"} <= set(spans) and "main/while_off.sh" not in spans
    assert spans["user_job"]["gwtrace.control.level"] == "functions"
    assert spans["user_job"]["gwtrace.control.rule"] == "r1"
    audit = _control(serve, "ada", "audit", groups=admin).stdout
    assert [line.split()[-2] for line in audit.splitlines()].count("command.result") >= 3
