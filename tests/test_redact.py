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
from typing import Dict, List, Tuple, Union

import pytest

from conftest import GWTRACE, LIB, REPO, clean_env

from gwtrace.wire.events import format_event, parse_attributes, parse_line
from gwtrace.wire.events import escape
from gwtrace.wire.redact import REDACTED, redact_pair, redact_value, redacts

JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl"

U = "[REDACTED]@"   # what a URL's credentials become

#: (key, value, written): True for [REDACTED], False for the value unchanged,
#: or the value written (a URL's credentials replaced).
TABLE: List[Tuple[str, str, Union[bool, str]]] = [
    # keys naming secrets, any case, anywhere in the key
    ("token", "v1", True), ("GITHUB_TOKEN", "v1", True), ("scitokenFile", "v1", True),
    ("password", "v1", True), ("passwd", "v1", True), ("db_passwd", "v1", True), ("userPassword", "v1", True),
    ("secret", "v1", True), ("client_secret", "v1", True), ("passphrase", "v1", True),
    ("proxy", "v1", True), ("X509_USER_PROXY", "/tmp/x509up_u1", True), ("credential", "v1", True),
    ("credentials", "v1", True), ("cookie", "v1", True), ("session.cookie", "v1", True),
    ("authorization", "v1", True), ("Authorization", "v1", True), ("authentication_mode", "v1", True),
    ("apikey", "v1", True), ("apiKey", "v1", True), ("privatekey", "v1", True), ("sshKey", "v1", True),
    ("SSHPASS", "v1", True), ("X-Amz-Signature", "v1", True), ("GITHUB_PAT", "v1", True),
    # the whole words pass, pwd, pw, auth, key, jwt
    ("my-pass", "v1", True), ("MY_PASS", "v1", True), ("pass", "v1", True), ("pass_rate", "0.9", True),
    ("ssh_key", "v1", True), ("api_key", "v1", True), ("x-api-key", "v1", True), ("private.key", "v1", True),
    ("key", "v1", True), ("auth", "v1", True), ("Auth", "v1", True), ("x-auth", "v1", True),
    ("db_pwd", "v1", True), ("PWD", "/home/u", True), ("jwt", "v1", True), ("id.jwt", "v1", True),
    ("pw", "v1", True), ("db.PW", "v1", True),
    # benign keys: these words only inside a longer word
    ("passes", "3", False), ("compass", "north", False), ("bypass_count", "2", False),
    ("author", "me", False), ("authority", "ca", False), ("keyboard", "us", False), ("monkey", "1", False),
    ("passage", "x", False), ("keys_total", "4", False), ("site", "FNAL", False),
    ("process.executable.name", "bash", False), ("htcondor.job.owner", "alice", False),
    ("cwd", "/tmp", False), ("jwtx", "y", False), ("pwm", "1", False), ("sig", "v1", False),
    # values: bearer tokens and JWTs, whatever the key
    ("header", "Bearer abc", True), ("h", "bearer abc", True), ("h", "BEARER  x", True),
    ("note", "sent Bearer xyz here", True), ("h", "Bearer", False), ("h", "Bearerxyz", False),
    ("h", "Bearer\tabc", True), ("h", "bearer\t", True),
    ("v", JWT, True), ("v", "pre " + JWT + " post", True), ("v", "eyJa.b.c", True), ("v", "eyJ..", False),
    ("v", "eyJa..", False), ("v", "EYJa.b.c", False), ("v", "eyJ-only", False), ("v", "a.b.c", False),
    ("v", "1.2.3", False), ("url", "https://example.org/x?y=1", False),
    # values: assignments of secrets (NAME= or NAME:), GitHub tokens
    ("arg", "--password=x", True), ("cmd", "mysql --user=u --password=hunter2 db", True),
    ("v", "error: password=hunter6 Bearer abc4", True), ("v", "db_passwd:x", True), ("v", "PassPhrase=x", True),
    ("env", "SSHPASS=s3cr3t", True), ("env", "GITHUB_PAT=x", True), ("v", "github_pat_11ABCDEFG0abc", True),
    ("env", "GITHUB_TOKEN=x", True), ("v", "access_token=x", True), ("v", "client_secret: x", True),
    ("h", "Authorization: Basic dXNlcjpwdw==", True), ("h", "Cookie: s=1", True), ("v", "apiKey=x", True),
    ("v", "X-Amz-Credential=x", True), ("v", "credentials:x", True), ("v", "sshkey=x", True),
    ("v", "privatekey=x", True),
    ("arg", "--pass=x", True), ("q", "a=1&pw=x", True), ("q", "pw:x", True), ("v", "PWD=/x", True),
    ("v", "auth: x", True), ("v", "aws_secret_access_key=x", True), ("v", "x-api-key: x", True),
    ("v", "key=x", True), ("v", "jwt=x", True), ("v", "Sig=x", True),
    ("url", "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=ab12", True),
    ("url", "https://storage.googleapis.com/b/o?X-Goog-Signature=ab12", True),
    ("url", "https://a.blob.core.windows.net/c/b?sv=2020-08-04&sig=ab12", True),
    ("url", "https://h/x?Signature=ab12&Expires=1", True),
    # ... and what only looks like one
    ("v", "bypass=1", False), ("v", "compass: north", False), ("v", "pwx=1", False), ("v", "ipw=1", False),
    ("v", "nsig=1", False), ("v", "signatures=3", False), ("v", "tokens=5", False), ("v", "monkey=1", False),
    ("v", "passes: 3", False), ("v", "password", False), ("v", "keyboard: us", False), ("v", "author: me", False),
    ("v", "at 12:30 k=v", False), ("v", "pw", False),
    # values: a URL's credentials (userinfo) replaced, the rest kept
    ("url", "https://user:pw@host/x", "https://" + U + "host/x"),
    ("url", "https://alice:hunter2@127.0.0.1:4318", "https://" + U + "127.0.0.1:4318"),
    ("remote", "https://ghp_abc@github.com/o/r.git", "https://" + U + "github.com/o/r.git"),
    ("v", "git clone https://u:p@h:8443/r and ssh://git@h2/x", "git clone https://" + U + "h:8443/r and ssh://" + U + "h2/x"),
    ("v", "'https://u:p@h' failed", "'https://" + U + "h' failed"), ("v", "https://@h", "https://" + U + "h"),
    ("v", "https://a@b@h/x", "https://" + U + "h/x"), ("v", "a://b@c://d@e", "a://" + U + "c://" + U + "e"),
    ("v", "https://u@h?q#f", "https://" + U + "h?q#f"), ("v", "https://u:p@h#x@y", "https://" + U + "h#x@y"),
    ("v", "https://host/x?mail=a@b", False), ("v", "https://h?m=a@b", False), ("v", "https://h#a@b", False),
    ("v", "see https://h then a@b", False), ("v", "https://h\ta@b", False), ("v", "mailto:a@b", False),
    ("v", "user@host:/path", False),
    ("url", "https://token:x@h/", True),            # a secret too: the whole value goes
]


def _written(key: str, value: str, expected: Union[bool, str]) -> str:
    if expected is True:
        return REDACTED
    return value if expected is False else str(expected)


def _expected() -> List[str]:
    return [_written(*row) for row in TABLE]


def test_the_python_rule_is_the_table() -> None:
    assert [redact_value(k, v) for k, v, _ in TABLE] == _expected()
    assert [redacts(k, v) for k, v, _ in TABLE] == [w is True for _, _, w in TABLE]


def test_python_producers_redact_by_the_rule() -> None:
    got, parsed = [], []
    for key, value, _ in TABLE:
        line = format_event("A", 1, 1, "a" * 32, "b" * 16, attributes={key: value})
        got.append(line.decode().rstrip("\n").split("\t")[6])
        parsed.append(str(dict(parse_line(line.rstrip(b"\n")).attributes)[key]))
    assert got == [escape(f"{k}={w}") for (k, _, _), w in zip(TABLE, _expected())]
    assert parsed == _expected()
    assert [redact_pair(k, v) for k, v in (("token", "x"), ("n", 3), ("site", "a"))] == \
        [("token", REDACTED), ("n", 3), ("site", "a")]


def test_the_sidecar_backstop_redacts_by_the_rule() -> None:
    """Lines written by a producer that did not redact (an old library, a
    hand-made line) lose their secrets when the sidecar parses them."""
    fields = [escape(f"{k}={v}") for k, v, _ in TABLE]
    parsed = parse_attributes(fields)
    assert [str(value) for _, value in parsed] == _expected()


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
    assert [r[column] for r in rows] == [escape(f"{k}={w}") for (k, _, _), w in zip(TABLE, _expected())]


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
  _gwtrace_jw_redact "$k" "$v"
  printf '%s\\n' "$_gwtrace_jw_r"
done
"""
    out = subprocess.run([*shell, "-c", script], input=_rows_input(), capture_output=True, text=True,
                         timeout=60, env=dict(os.environ, LC_ALL="C.UTF-8"))
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert out.stdout.split("\n")[:-1] == _expected()


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


#: (status message, what is written after "error:"): by the value rule.
MESSAGES: List[Tuple[str, str]] = [
    ("error: password=hunter6 Bearer abc4", REDACTED), ("copy failed: Bearer\tabc4", REDACTED),
    ("push to https://alice:hunter6@git.example.org/r failed", "push to https://" + U + "git.example.org/r failed"),
    ("disk full", "disk full"), ("token expired", "token expired"),
]


def test_status_messages_are_redacted_by_every_producer(tmp_path: Path) -> None:
    """``trace_end MESSAGE`` (bash), format_event (Python) and the sidecar's parser (a
    hand-made line) write or keep the message as the value rule says."""
    script = (f'source "{LIB}"\n'
              "while IFS= read -r m; do trace_begin s; trace_end \"$m\" || :; done\n")
    out = subprocess.run(["bash", "-euo", "pipefail", "-c", script], input="".join(m + "\n" for m, _ in MESSAGES),
                         env=clean_env(GWTRACE_DIR=str(tmp_path)), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    bash = [line.split("\t")[6] for line in (tmp_path / "events.log").read_text().splitlines()
            if line.split("\t")[1] == "E"]
    python = [format_event("E", 1, 1, "a" * 32, "b" * 16, "error:" + escape(m)).decode().rstrip("\n").split("\t")[6]
              for m, _ in MESSAGES]
    sidecar = [parse_line(f"gw1\tE\t1\t1\t{'a' * 32}\t{'b' * 16}\terror:{escape(m)}".encode()).status
               for m, _ in MESSAGES]
    wanted = ["error:" + escape(w) for _, w in MESSAGES]
    assert bash == wanted and python == wanted and sidecar == wanted
    assert "hunter6" not in (tmp_path / "events.log").read_text()
