"""One redaction rule, every producer: a conformance test.

The rule of docs/protocol.md ("Secrets") lives once per language:
bash/gwtrace.sh (_gwtrace_redacts), sidecar/gwtrace/wire/redact.py and
shim/gwtrace-job-wrapper (_gwtrace_jw_redacts). Every producer, and the
sidecar's backstop, runs on the same table and must agree with it row by row:
the bash library through both trace_begin paths (its fast path only checks
that redaction cannot apply: a wrong check would leak here), the Python
producers (format_event, `gwtrace span`), the POSIX sh wrapper under each
sh found (dash, busybox, bash --posix), and the sidecar's parser.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from conftest import GWTRACE, LIB, REPO, clean_env

from gwtrace.wire.events import format_event, parse_attributes, parse_line
from gwtrace.wire.redact import REDACTED, redact_attributes, redacts

JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl"

#: (key, value, redacted?)
TABLE: List[Tuple[str, str, bool]] = [
    # keys naming secrets, any case, anywhere in the key
    ("token", "v1", True), ("GITHUB_TOKEN", "v1", True), ("scitokenFile", "v1", True),
    ("password", "v1", True), ("passwd", "v1", True), ("db_passwd", "v1", True), ("userPassword", "v1", True),
    ("secret", "v1", True), ("client_secret", "v1", True), ("passphrase", "v1", True),
    ("proxy", "v1", True), ("X509_USER_PROXY", "/tmp/x509up_u1", True), ("credential", "v1", True),
    ("credentials", "v1", True), ("cookie", "v1", True), ("session.cookie", "v1", True),
    ("authorization", "v1", True), ("Authorization", "v1", True), ("authentication_mode", "v1", True),
    ("apikey", "v1", True), ("apiKey", "v1", True), ("privatekey", "v1", True), ("sshKey", "v1", True),
    # the whole words pass, pwd, auth, key, jwt
    ("my-pass", "v1", True), ("MY_PASS", "v1", True), ("pass", "v1", True), ("pass_rate", "0.9", True),
    ("ssh_key", "v1", True), ("api_key", "v1", True), ("x-api-key", "v1", True), ("private.key", "v1", True),
    ("key", "v1", True), ("auth", "v1", True), ("Auth", "v1", True), ("x-auth", "v1", True),
    ("db_pwd", "v1", True), ("PWD", "/home/u", True), ("jwt", "v1", True), ("id.jwt", "v1", True),
    # benign keys: these words only inside a longer word
    ("passes", "3", False), ("compass", "north", False), ("bypass_count", "2", False),
    ("author", "me", False), ("authority", "ca", False), ("keyboard", "us", False), ("monkey", "1", False),
    ("passage", "x", False), ("keys_total", "4", False), ("site", "FNAL", False),
    ("process.executable.name", "bash", False), ("htcondor.job.owner", "alice", False),
    ("cwd", "/tmp", False), ("jwtx", "y", False),
    # values: bearer tokens and JWTs, whatever the key
    ("header", "Bearer abc", True), ("h", "bearer abc", True), ("h", "BEARER  x", True),
    ("note", "sent Bearer xyz here", True), ("h", "Bearer", False), ("h", "Bearerxyz", False),
    ("v", JWT, True), ("v", "pre " + JWT + " post", True), ("v", "eyJa.b.c", True), ("v", "eyJ..", False),
    ("v", "eyJa..", False), ("v", "EYJa.b.c", False), ("v", "eyJ-only", False), ("v", "a.b.c", False),
    ("v", "1.2.3", False), ("url", "https://example.org/x?y=1", False),
]


def _expected() -> List[bool]:
    return [row[2] for row in TABLE]


def test_the_python_rule_is_the_table() -> None:
    assert [redacts(k, v) for k, v, _ in TABLE] == _expected()


def test_python_producers_redact_by_the_rule() -> None:
    got = []
    for key, value, _ in TABLE:
        line = format_event("A", 1, 1, "a" * 32, "b" * 16, attributes={key: value})
        attrs = dict(parse_line(line.rstrip(b"\n")).attributes)
        got.append(line.decode().rstrip("\n").endswith(f"\t{key}={REDACTED}") and attrs[key] == REDACTED)
    assert got == _expected()
    assert redact_attributes({"token": "x", "n": 3, "site": "a"}) == {"token": REDACTED, "n": 3, "site": "a"}


def test_the_sidecar_backstop_redacts_by_the_rule() -> None:
    """Lines written by a producer that did not redact (an old library, a
    hand-made line) lose their secrets when the sidecar parses them."""
    fields = [f"{k}={v}" for k, v, _ in TABLE]
    parsed = parse_attributes(fields)
    assert [value == REDACTED for _, value in parsed] == _expected()


def _bash_rows(mode: str) -> str:
    """A script feeding every row through one of the library's paths."""
    return "\n".join([
        f'source "{LIB}"',
        "trace_begin root",
        "while IFS= read -r k && IFS= read -r v; do",
        {"fast": '  trace_begin row "$k=$v"; trace_end',
         "general": '  trace_begin row "$k=$v" a=1 b=2 c=3 d=4; trace_end',
         "attr": '  trace_attr "$k=$v"'}[mode],
        "done",
        "trace_end",
    ])


def _rows_input() -> str:
    return "".join(f"{k}\n{v}\n" for k, v, _ in TABLE)


@pytest.mark.parametrize("mode", ["fast", "general", "attr"])
def test_the_bash_library_redacts_by_the_rule(tmp_path: Path, mode: str) -> None:
    env = clean_env(GWTRACE_DIR=str(tmp_path))
    out = subprocess.run(["bash", "-euo", "pipefail", "-c", _bash_rows(mode)], input=_rows_input(), env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    lines = (tmp_path / "events.log").read_text().splitlines()
    kind, column = ("A", 6) if mode == "attr" else ("B", 11)
    rows = [line.split("\t") for line in lines if line.split("\t")[1] == kind]
    if mode != "attr":
        rows = [r for r in rows if r[10] == "row"]
    assert len(rows) == len(TABLE)
    got = [r[column].endswith("=" + REDACTED) for r in rows]
    assert got == _expected()
    for (key, value, secret), row in zip(TABLE, rows):
        assert row[column] == f"{key}={REDACTED if secret else value}"


def _posix_shells() -> List[List[str]]:
    shells = []
    if shutil.which("dash"):
        shells.append(["dash"])
    if shutil.which("busybox"):
        shells.append(["busybox", "sh"])
    shells.append(["bash", "--posix"])
    return shells


def _wrapper_redaction_block() -> str:
    """The wrapper's redaction function, alone (the wrapper's body runs a job)."""
    text = (REPO / "shim" / "gwtrace-job-wrapper").read_text()
    m = re.search(r"^# --- redaction .*?^# --- end of redaction ---$", text, re.M | re.S)
    assert m, "redaction block markers missing in shim/gwtrace-job-wrapper"
    return m.group(0)


@pytest.mark.parametrize("shell", _posix_shells(), ids=lambda s: " ".join(s))
def test_the_posix_sh_wrapper_redacts_by_the_rule(shell: List[str]) -> None:
    script = _wrapper_redaction_block() + """
while IFS= read -r k && IFS= read -r v; do
  if _gwtrace_jw_redacts "$k" "$v"; then echo 1; else echo 0; fi
done
"""
    out = subprocess.run([*shell, "-c", script], input=_rows_input(), capture_output=True, text=True,
                         timeout=60, env=dict(os.environ, LC_ALL="C.UTF-8"))
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert [line == "1" for line in out.stdout.splitlines()] == _expected()


def test_the_job_wrapper_writes_redacted_attributes(tmp_path: Path) -> None:
    """End to end: a job ad whose Owner is a bearer token reaches the log redacted."""
    ad = tmp_path / "job.ad"
    ad.write_text('Owner = "Bearer s3cr3t"\nClusterId = 7\nProcId = 0\n')
    (tmp_path / "events.log").touch(mode=0o600)
    env = clean_env(GWTRACE_DIR=str(tmp_path), _CONDOR_JOB_AD=str(ad))
    out = subprocess.run(["sh", str(REPO / "shim" / "gwtrace-job-wrapper"), "true"], env=env,
                         capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    log = (tmp_path / "events.log").read_text()
    assert "s3cr3t" not in log and f"htcondor.job.owner={REDACTED}" in log


def test_gwtrace_span_redacts_its_attributes(tmp_path: Path) -> None:
    env = clean_env(GWTRACE_DIR=str(tmp_path))
    out = subprocess.run([GWTRACE, "span", "s", "token=s3cr3t-1", "password=s3cr3t-2", "auth=Bearer s3cr3t-3",
                          "my-pass=s3cr3t-4", f"v={JWT}", "site=FNAL", "--", "true"],
                         env=env, capture_output=True, timeout=60)
    assert out.returncode == 0 and out.stderr == b""
    log = (tmp_path / "events.log").read_text()
    assert "s3cr3t" not in log and JWT not in log
    begin = log.splitlines()[0].split("\t")
    attrs: Dict[str, str] = dict(f.split("=", 1) for f in begin[11:])
    assert attrs["token"] == attrs["password"] == attrs["auth"] == attrs["my-pass"] == attrs["v"] == REDACTED
    assert attrs["site"] == "FNAL"
