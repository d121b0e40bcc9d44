"""GWTRACE_OTLP_TOKEN_FILE: a bearer token for the collector, by path only.

The token is the one secret a traced glidein may carry. It must reach the
collector as ``Authorization: Bearer <token>`` and nowhere else: not in
glidein_config (the glidein prints it into its .err), not in the job's
environment, not in the event log, the spans, the shipped-home payload or a
log line. A token file that cannot be used is one warning line, and the spans
are kept (they ride home) rather than sent unauthenticated and refused.
"""

from __future__ import annotations

import gzip
import subprocess
from pathlib import Path
from typing import Dict, List

from conftest import clean_env
from gwtrace.export.otlpenv import TOKEN_FILE_VARIABLE, otlp_env
from gwtrace.wire.blocks import Block, find_blocks
from otlp_receiver import OtlpReceiver
from test_shim_setup import (condor_job_wrapper, gconfig, glidein, job_environment, run_later_validation_script,  # noqa: F401
                             run_setup, setup_env)

TOKEN = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXRva2VuLWZvci10ZXN0cw.sig-0123456789"
P = "OTEL_EXPORTER_OTLP_"


def test_the_token_file_becomes_the_authorization_header_only(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    env = {f"{P}ENDPOINT": "http://c:4318", f"{P}HEADERS": "authorization=Basic%20x,x-tenant=a",
           TOKEN_FILE_VARIABLE: str(token)}
    got = otlp_env(env)
    assert got.headers == {"x-tenant": "a", "Authorization": f"Bearer {TOKEN}"} and got.token_problem == ""
    assert otlp_env({f"{P}ENDPOINT": "http://c:4318"}).token_problem == ""


def test_an_unusable_token_file_is_a_problem_that_never_shows_its_content(tmp_path: Path) -> None:
    cases = {"missing": None, "empty": "\n", "two words": f"{TOKEN} {TOKEN}\n"}
    for name, content in cases.items():
        path = tmp_path / name.replace(" ", "_")
        if content is not None:
            path.write_text(content)
        got = otlp_env({f"{P}ENDPOINT": "http://c:4318", TOKEN_FILE_VARIABLE: str(path)})
        assert "authorization" not in {k.lower() for k in got.headers}, name
        assert got.token_problem.startswith(f"{TOKEN_FILE_VARIABLE}='{path}': "), name
        assert TOKEN not in got.token_problem


def _glidein_with(glidein: Dict[str, Path], **attrs: str) -> None:
    with glidein["config"].open("a") as f:
        for key, value in attrs.items():
            f.write(f"{key} {value}\n")


def _later_script_and_job(glidein: Dict[str, Path]) -> subprocess.CompletedProcess:
    """A traced validation script, then a user job that prints its environment."""
    run_later_validation_script(glidein)
    return subprocess.run(["sh", str(condor_job_wrapper(glidein)), "/bin/sh", "-c", "env"],
                          env=job_environment(glidein), capture_output=True, text=True, timeout=30)


def _stop(glidein: Dict[str, Path]) -> None:
    cleanup = glidein["base"] / ".gwms.d" / "exec" / "cleanup"
    with open(glidein["base"] / "job.err", "a") as err:
        for hook in sorted(cleanup.iterdir()):          # glidein_exit runs them in name order
            assert subprocess.run([str(hook), str(glidein["config"])], env=clean_env(), stderr=err,
                                  timeout=120).returncode == 0


def _everything_left(root: Path) -> List[bytes]:
    """Every file under root, and the decoded payload of every shipped-home block."""
    found = [p.read_bytes() for p in root.rglob("*") if p.is_file()]
    for data in list(found):
        found += [gzip.decompress(b.payload) if b.payload[:2] == b"\x1f\x8b" else b.payload
                  for b in find_blocks(data) if isinstance(b, Block)]
    return found


def test_the_token_reaches_the_collector_and_nothing_else(glidein, receiver: OtlpReceiver, tmp_path: Path) -> None:
    secret = tmp_path / "site" / "collector.token"
    secret.parent.mkdir()
    secret.write_text(TOKEN + "\n")
    _glidein_with(glidein, GWTRACE_OTLP_TRACES_ENDPOINT=receiver.endpoint, GWTRACE_OTLP_TOKEN_FILE=str(secret))
    out = run_setup(glidein, setup_env(OTEL_EXPORTER_OTLP_TIMEOUT="2000"))
    assert out.returncode == 0 and out.stderr == "", out.stderr
    pid = gconfig(glidein["config"], "GWTRACE_SIDECAR_PID")
    environ = Path(f"/proc/{pid}/environ").read_bytes()
    assert str(secret).encode() in environ and TOKEN.encode() not in environ
    job = _later_script_and_job(glidein)
    assert job.returncode == 0 and "TRACEPARENT=" in job.stdout and TOKEN not in job.stdout
    _stop(glidein)

    assert {"glidein", "validate_node.sh", "check_tmp", "user_job"} <= {s.name for s in receiver.spans}
    assert {h.get("authorization") for h in receiver.headers} == {f"Bearer {TOKEN}"}
    for span in receiver.spans:
        assert TOKEN not in repr((span.attributes, span.resource, span.events, span.status_message))
    assert not [data[:80] for data in _everything_left(glidein["base"]) if TOKEN.encode() in data]


def test_an_unreadable_token_file_is_one_warning_and_the_spans_ride_home(glidein, receiver: OtlpReceiver) -> None:
    missing = glidein["base"] / "no-such.token"
    _glidein_with(glidein, GWTRACE_OTLP_TRACES_ENDPOINT=receiver.endpoint, GWTRACE_OTLP_TOKEN_FILE=missing.name)
    # (a relative path: the glidein's work directory, main/)
    out = run_setup(glidein, setup_env())
    assert out.returncode == 0 and gconfig(glidein["config"], "GWTRACE_DIR"), out.stderr
    _later_script_and_job(glidein)
    _stop(glidein)
    assert receiver.spans == []
    blocks = [b for b in find_blocks((glidein["base"] / "job.err").read_bytes()) if isinstance(b, Block)]
    assert sum(int(b.meta["spans"]) for b in blocks) >= 4
    sidecar_dir = Path(gconfig(glidein["config"], "GWTRACE_DIR"))
    logs = b"\n".join(p.read_bytes() for p in sidecar_dir.parent.rglob("*") if p.is_file()
                      and p.suffix in (".err", ".log") and p.name != "events.log")
    logs += (glidein["base"] / "job.err").read_bytes()
    warnings = [line for line in logs.decode(errors="replace").splitlines() if TOKEN_FILE_VARIABLE in line]
    assert len(warnings) == 1, warnings
    assert f"{glidein['main']}/no-such.token" in warnings[0] and "cannot read it" in warnings[0]


def test_ingest_with_an_unusable_token_file_says_so_in_one_line_and_sends_nothing(tmp_path: Path,
                                                                                  receiver: OtlpReceiver) -> None:
    from conftest import GWTRACE

    (tmp_path / "logs").mkdir()
    env = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.endpoint, GWTRACE_HOME=str(tmp_path / "f"),
                    GWTRACE_OTLP_TOKEN_FILE=str(tmp_path / "missing.token"))
    for args in ([str(tmp_path / "logs")], ["--watch", str(tmp_path / "logs"), "--once"]):
        out = subprocess.run([GWTRACE, "ingest", *args], env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
        assert "GWTRACE_OTLP_TOKEN_FILE=" in out.stderr and "nothing sent" in out.stderr
    assert receiver.requests == 0
