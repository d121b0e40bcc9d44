"""Every producer of version-1 event lines, on the same inputs: identical lines.

docs/protocol.md has one reference formatter, ``gwtrace.wire.events.format_event``
(escaping, redaction, truncation to the 4000-byte write limit). Every producer
is run on one table of inputs and each line it writes must equal, byte for
byte, what the reference builds from the same inputs and the line's own
timestamp, pid and ids (those are the producer's to choose; everything else
is the protocol's). Every line must parse with the one parser
(``wire.events.parse_line``). A second table runs every producer on the same
TRACEPARENT values and requires the same acceptance, trace id, parent, remote
bit and flags.

What each producer can carry (the columns of the tables below):

| producer | span name | attributes | TRACEPARENT |
|---|---|---|---|
| bash library (``trace_begin``/``trace_attr``, fast and general paths) | any | any | yes |
| auto layer (``BASH_ENV=gwtrace-auto.sh``) | the script's file name (no ``/``, at most 255 bytes: no truncation case) | only its own: ``code.file.path`` (the path, cut at 1000 characters), ``process.pid``, ``gwtrace.kind`` | yes |
| job wrapper (POSIX sh; dash, busybox, bash --posix) | always ``user_job`` | only the job ad's: ``htcondor.job.owner`` carries the table's values (an ad line holds no LF or CR); a value it would have to escape (TAB, backslash) or an empty one is left out, by design | yes |
| setup script's clean-up hook (heredoc in ``shim/gwtrace_setup.sh``) | none: it writes the one ``E`` line of the glidein span | none | none: its ids are written into it (the setup script's own spans are the bash library's) |
| Python (``gwtrace.shim.context.Span``: ``gwtrace run``/``span``; the ``gwtrace span`` CLI) | any | any | yes |

Every producer conforms on every case, in a UTF-8 locale and under LC_ALL=C:
no case is marked xfail (KNOWN_WRONG would say which, with the reason).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import pytest

from conftest import GWTRACE, LIB, REPO, clean_env

from gwtrace.shim.context import EventLog, Span, incoming_context
from gwtrace.wire import traceparent
from gwtrace.wire.events import escape, format_event, parse_line

#: The event line's description (spec/event-line.json; tests/test_spec.py holds the producers'
#: constants and these tables against it): its record types and the write limit every line keeps.
SPEC = json.loads((REPO / "spec" / "event-line.json").read_text(encoding="utf-8"))
KINDS = frozenset(SPEC["records"])
ATOMIC_WRITE_BYTES = SPEC["limits"]["atomic_write_bytes"]["value"]
AUTO = REPO / "bash" / "gwtrace-auto.sh"
WRAPPER = REPO / "shim" / "gwtrace-job-wrapper"
SETUP = REPO / "shim" / "gwtrace_setup.sh"
JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl"

#: Span names and attribute values: what escaping has to get right.
TEXTS: List[str] = [
    "plain", "two words", "a=b", 'say "hi"', "it's", "tab\there", "line\nbreak", "cr\rhere",
    "back\\slash", "trail\\", "\\t literal", "ünïcödé ✓ 日本", "$HOME `x` $(y) ${z}", "*?[glob]", "-n", "%s %d",
]
#: Secrets in values and status messages (docs/protocol.md, "Secrets"; tests/test_redact.py
#: has the whole table), URLs with credentials (kept but for them), and look-alikes.
SECRET_TEXTS: List[str] = [
    "--password=x", "error: password=hunter6 Bearer abc4", "Bearer\tabc", "SSHPASS=x", "GITHUB_PAT=x",
    "github_pat_11ABCDEFG0abc", "a=1&pw=x", "Authorization: Basic dXNlcjpwdw==", "bypass=1", "nsig=1",
    "https://b.s3.amazonaws.com/k?X-Amz-Signature=ab12", "https://a.blob.core.windows.net/c?sv=1&sig=ab12",
    "https://storage.googleapis.com/b/o?X-Goog-Signature=ab12", "https://user:pw@host/x",
    "git clone https://u:p@h:8443/r and ssh://git@h2/x", "https://host/x?mail=a@b", "https://token:x@h/",
    "https://u:p@h/" + "ü" * 1200,
]
#: Values only: past the line limit (cut), empty, and secrets by value.
VALUES: List[str] = TEXTS + [
    "", "x" * 6000, "é" * 3000, "a\\" * 2500, "Bearer abc", "sent BEARER x", JWT, "eyJa.b.c", "v=w=x",
] + SECRET_TEXTS
#: (key, value): secrets by key, and keys that only look like one.
KEYED: List[Tuple[str, str]] = [
    ("token", "s3cr3t"), ("GITHUB_TOKEN", "s3cr3t"), ("db_passwd", "s3cr3t"), ("X509_USER_PROXY", "/tmp/x509up_u1"),
    ("my-pass", "s3cr3t"), ("MY_PASS", "s3cr3t"), ("ssh_key", "s3cr3t"), ("x-api-key", "s3cr3t"),
    ("Authorization", "Basic s3cr3t"), ("id.jwt", "s3cr3t"), ("compass", "north"), ("author", "me"),
    ("keys_total", "4"), ("key with space", "v"), ("k\tey", "v"), ("site", "FNAL"),
    ("SSHPASS", "s3cr3t"), ("X-Amz-Signature", "s3cr3t"), ("GITHUB_PAT", "s3cr3t"), ("db.pw", "s3cr3t"),
]
ROWS: List[Tuple[str, str, str]] = (
    [(name, "k", "v") for name in TEXTS]
    + [("row", "k", value) for value in VALUES]
    + [("row", key, value) for key, value in KEYED]
    + [("x" * 5000, "k", "v"), ("n" * 2000, "k", "y" * 3000)]     # long names: the name is never cut
)
PAD = [("a", "1"), ("b", "2"), ("c", "3"), ("d", "4")]              # a fifth attribute: the general path


def _log_lines(path: Path) -> List[bytes]:
    data = path.read_bytes() if path.exists() else b""
    assert data.endswith(b"\n") or not data
    return data.split(b"\n")[:-1] if data else []


def _fields(line: bytes) -> List[str]:
    return line.decode("utf-8").split("\t")


def _expected(line: bytes, name: Optional[str], attributes: Sequence[Tuple[str, str]],
              status: Optional[str] = None) -> bytes:
    """The reference line for ``line``'s kind, timestamp, pid and ids (and, for a B,
    its parent, remote bit, flags and tracestate), with these name and attributes."""
    f = _fields(line)
    kind, ts, pid, trace, span = f[1], f[2], f[3], f[4], f[5]
    fields: List[str]
    if kind == "B":
        assert name is not None
        fields = [f[6], f[7], f[8], f[9], escape(name)]
    elif kind == "E":
        fields = [status if status is not None else f[6]]
    else:
        fields = []
    return format_event(kind, ts, pid, trace, span, *fields, attributes=dict(attributes))  # type: ignore[arg-type]


def _check(lines: List[bytes], wanted: List[Tuple[Optional[str], Sequence[Tuple[str, str]]]]) -> None:
    """Each line parses and equals the reference; all lines are under the write limit."""
    assert len(lines) == len(wanted)
    for line, (name, attrs) in zip(lines, wanted):
        parse_line(line)                                   # the one parser takes it
        assert _fields(line)[1] in KINDS and len(line) + 1 <= ATOMIC_WRITE_BYTES
        assert line + b"\n" == _expected(line, name, attrs), (name, attrs)


# --- producers of names and attributes ---------------------------------------------------

def _run_library(tmp_path: Path, mode: str, locale: str = "C.UTF-8") -> List[bytes]:
    """Every row through trace_begin (fast or general path) or trace_attr, inside a root span."""
    call = {"fast": 'trace_begin "$n" "$k=$v"; trace_end 0',
            "general": 'trace_begin "$n" "$k=$v" a=1 b=2 c=3 d=4; trace_end 0',
            "attr": 'trace_attr "$k=$v"'}[mode]
    script = (f'source "{LIB}"\ntrace_begin root\n'
              "while IFS= read -r -d '' n && IFS= read -r -d '' k && IFS= read -r -d '' v; do\n"
              f"  {call}\ndone\ntrace_end 0\n")
    stdin = "".join(f"{n}\0{k}\0{v}\0" for n, k, v in ROWS)
    out = subprocess.run(["bash", "-euo", "pipefail", "-c", script], input=stdin.encode(),
                         env=clean_env(GWTRACE_DIR=str(tmp_path), LC_ALL=locale),
                         capture_output=True, timeout=120)
    assert out.returncode == 0 and out.stderr == b"", out.stderr
    lines = _log_lines(tmp_path / "events.log")[1:-1]       # not the root's B and E
    if mode == "attr":
        return lines
    return [line for line in lines if line.split(b"\t")[1] == b"B"]


@pytest.mark.parametrize("mode", ["fast", "general", "attr"])
def test_bash_library_writes_the_reference_lines(tmp_path: Path, mode: str) -> None:
    lines = _run_library(tmp_path, mode)
    pad = PAD if mode == "general" else []
    _check(lines, [(None if mode == "attr" else n, [(k, v)] + pad) for n, k, v in ROWS])


#: Status messages (``trace_end MESSAGE``): escaping, secrets, cutting. (A first argument
#: that reads as KEY=VALUE, no blank in KEY, is an attribute: those get a first word.)
MESSAGES: List[str] = [m if "=" not in m or " " in m.partition("=")[0] else "failed: " + m
                       for m in ["disk full", "tab\there", "line\nbreak", "back\\slash", "ünïcödé ✓", "m" * 5000,
                                 "é" * 1500, "x" * 4090 + " password=y"] + SECRET_TEXTS]


def test_bash_library_writes_the_reference_end_lines(tmp_path: Path) -> None:
    """``trace_end MESSAGE`` writes ``error:<message>``: escaped, its secrets redacted by the value
    rule (a URL's credentials replaced), cut as the reference cuts it; and where it failed, as any
    producer may (docs/protocol.md, "Failures"): here the line of the `bash -c` text (no file)."""
    script = (f'source "{LIB}"\ntrace_begin root\n'
              "while IFS= read -r -d '' m; do trace_begin s; trace_end \"$m\" || :; done\ntrace_end 0\n")
    stdin = "".join(f"{m}\0" for m in MESSAGES)
    out = subprocess.run(["bash", "-euo", "pipefail", "-c", script], input=stdin.encode(),
                         env=clean_env(GWTRACE_DIR=str(tmp_path), LC_ALL="C.UTF-8"), capture_output=True, timeout=120)
    assert out.returncode == 0 and out.stderr == b"", out.stderr
    ends = [line for line in _log_lines(tmp_path / "events.log")[1:-1] if line.split(b"\t")[1] == b"E"]
    assert len(ends) == len(MESSAGES)
    for line, message in zip(ends, MESSAGES):
        parse_line(line)
        assert line + b"\n" == _expected(line, None, [("code.line.number", "3")],
                                         status="error:" + escape(message)), message
    written = b"\n".join(ends).decode()
    assert "hunter6" not in written and "abc4" not in written and ":pw@" not in written and "u:p@" not in written


def test_bash_library_writes_the_reference_lines_under_the_c_locale(tmp_path: Path) -> None:
    lines = _run_library(tmp_path, "fast", "C")
    _check(lines, [(n, [(k, v)]) for n, k, v in ROWS])


def test_python_span_writes_the_reference_lines(tmp_path: Path) -> None:
    log = EventLog(str(tmp_path / "events.log"))
    for name, key, value in ROWS:
        Span(log, name, None, {key: value}).end("0")
    lines = [line for line in _log_lines(tmp_path / "events.log") if line.split(b"\t")[1] == b"B"]
    _check(lines, [(n, [(k, v)]) for n, k, v in ROWS])


def test_gwtrace_span_cli_writes_the_reference_lines(tmp_path: Path) -> None:
    """The CLI's own argument handling (``k=v`` split at the first ``=``), on rows a shell can pass."""
    rows = [r for r in ROWS if "=" not in r[1] and "\0" not in r[0] + r[2]][::3]
    for name, key, value in rows:
        out = subprocess.run([GWTRACE, "span", name, f"{key}={value}", "--", "true"], capture_output=True,
                             env=clean_env(GWTRACE_DIR=str(tmp_path)), timeout=60)
        assert out.returncode == 0 and out.stderr == b"", out.stderr
    lines = [line for line in _log_lines(tmp_path / "events.log") if line.split(b"\t")[1] == b"B"]
    base = [("gwtrace.kind", "span"), ("process.executable.name", "true")]
    _check(lines, [(n, base + [(k, v)]) for n, k, v in rows])


def test_auto_layer_writes_the_reference_lines(tmp_path: Path) -> None:
    """Script names (the span name) and paths (code.file.path) with every awkward character."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    names = [n for n in TEXTS if "/" not in n and len(n.encode()) < 200]
    for name in names:
        (scripts / name).write_text(":\n")
    env = clean_env(GWTRACE_DIR=str(tmp_path), BASH_ENV=str(AUTO), GWTRACE_AUTO_LEVEL="scripts", LC_ALL="C.UTF-8")
    for name in names:
        out = subprocess.run(["bash", str(scripts / name)], env=env, capture_output=True, timeout=60)
        assert out.returncode == 0 and out.stderr == b"", (name, out.stderr)
    lines = [line for line in _log_lines(tmp_path / "events.log") if line.split(b"\t")[1] == b"B"]
    wanted = []
    for name, line in zip(names, lines):
        pid = _fields(line)[3]
        wanted.append((name, [("gwtrace.kind", "script"), ("process.pid", pid),
                              ("code.file.path", str(scripts / name)[:1000])]))
    _check(lines, wanted)


#: The job wrapper's shells: id -> (argv, bash on PATH). With bash on PATH the
#: wrapper re-executes itself in bash; without, dash and busybox run it all.
WRAPPER_SHELLS: Dict[str, Tuple[List[str], bool]] = {
    **{" ".join(argv): (argv, False) for argv in (["dash"], ["busybox", "sh"]) if shutil.which(argv[0])},
    "dash, bash on PATH": (["dash"], True),
    "bash --posix": (["bash", "--posix"], True),
}


def _run_wrapper(shell: str, tmp_path: Path, command: List[str], **env: str) -> "subprocess.CompletedProcess[bytes]":
    argv, with_bash = WRAPPER_SHELLS[shell]
    path = "/usr/bin:/bin"
    if not with_bash:
        nobash = tmp_path / "nobash"
        if not nobash.exists():
            nobash.mkdir()
            for tool in ("sh", "dash", "busybox", "date", "od", "tr", "cat"):
                found = shutil.which(tool)
                if found:
                    (nobash / tool).symlink_to(found)
        path = str(nobash)
    full = clean_env(PATH=path, **{"LC_ALL": "C.UTF-8", **env})
    return subprocess.run([*argv, str(WRAPPER), *command], env=full, capture_output=True, timeout=60)


def _wrapper_value_ok(value: str) -> bool:
    """The wrapper leaves out a value it would have to escape, and an empty one (by design)."""
    return value != "" and not any(c in value for c in "\t\n\r\\")


def _wrapper_rows(shell: str, tmp_path: Path, values: List[str], **env: str) -> None:
    lines: List[bytes] = []
    wanted = []
    for i, value in enumerate(values):
        d = tmp_path / str(i)
        d.mkdir()
        (d / "events.log").touch(mode=0o600)
        ad = d / "job.ad"
        ad.write_text(f'Owner = "{value}"\n')
        out = _run_wrapper(shell, tmp_path, ["true"], GWTRACE_DIR=str(d), _CONDOR_JOB_AD=str(ad), **env)
        assert out.returncode == 0 and out.stderr == b"", out.stderr
        begin = [line for line in _log_lines(d / "events.log") if line.split(b"\t")[1] == b"B"]
        assert len(begin) == 1
        lines += begin
        owner = [("htcondor.job.owner", value)] if _wrapper_value_ok(value) else []
        wanted.append(("user_job", [("gwtrace.kind", "job")] + owner + [("process.executable.name", "true")]))
    _check(lines, wanted)


LONG_NON_ASCII = [v for v in VALUES if not v.isascii() and len(v) > 1000] + ["ü" * 9000]


@pytest.mark.parametrize("shell", list(WRAPPER_SHELLS))
def test_job_wrapper_writes_the_reference_lines(tmp_path: Path, shell: str) -> None:
    """Values through the job ad's Owner (htcondor.job.owner): escaping, redaction by value, cutting."""
    values = [v for v in VALUES if "\n" not in v and "\r" not in v]       # an ad line holds neither
    values += ["y" * 3990, "z" * 4100, "w" * 20000]
    values = [v for v in values if v not in LONG_NON_ASCII]               # the next test
    _wrapper_rows(shell, tmp_path, values)


@pytest.mark.parametrize("shell", list(WRAPPER_SHELLS))
@pytest.mark.parametrize("locale", ["C.UTF-8", "C"])
def test_job_wrapper_cuts_long_non_ascii_values_as_bash(tmp_path: Path, shell: str, locale: str) -> None:
    """dash counts a UTF-8 value in bytes, busybox matches '?' against bytes, bash
    under LC_ALL=C counts bytes: the wrapper measures and cuts in characters itself."""
    _wrapper_rows(shell, tmp_path, LONG_NON_ASCII, LC_ALL=locale)


def test_the_glidein_hooks_spans_with_given_ids_are_reference_lines(tmp_path: Path) -> None:
    """``_gwtrace_put_begin``/``_gwtrace_put_end`` (gwtrace_setup.sh's step and clean-up
    hooks: spans whose ids and times are known) write the reference lines:
    escaped name, redacted and fitted attributes, a message status."""
    log = tmp_path / "events.log"
    trace, span, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "a0b1c2d3e4f50617"
    script = (f'source "{LIB}"; '
              f'_gwtrace_put_begin 1700000000.000000 {trace} {span} {parent} $\'main/odd\\tname.sh\' '
              f'glidein.script=main/x.sh api_token=abc "detail=$(printf "%.0sx" {{1..5000}})"; '
              f'_gwtrace_put_end 1700000001.250000 {trace} {span} "HTCondor failed: no"$\'\\n\'"slots" '
              f'process.exit.code=1; '
              f'_gwtrace_put_begin 1700000002.000000 {trace} 1111111111111111 - glidein; '
              f'_gwtrace_put_end 1700000003.000000 {trace} 1111111111111111 0')
    out = subprocess.run(["bash", "-c", script], env=clean_env(GWTRACE_DIR=str(tmp_path)), capture_output=True,
                         timeout=60)
    assert out.returncode == 0 and out.stderr == b"", out.stderr
    begin, end, root_begin, root_end = _log_lines(log)
    assert _fields(begin)[4:10] == [trace, span, parent, "0", "01", "-"]
    assert _fields(begin)[10] == escape("main/odd\tname.sh")
    assert begin + b"\n" == _expected(begin, "main/odd\tname.sh",
                                      [("glidein.script", "main/x.sh"), ("api_token", "abc"), ("detail", "x" * 5000)])
    assert end + b"\n" == _expected(end, None, [("process.exit.code", "1")],
                                    status="error:" + escape("HTCondor failed: no\nslots"))
    assert _fields(root_begin)[6] == "-" and _fields(root_end)[6:] == ["0"]
    for line in (begin, end, root_begin, root_end):
        parse_line(line)


# --- TRACEPARENT -----------------------------------------------------------------------------

TID, SID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
VALID = f"00-{TID}-{SID}-01"

#: (label, TRACEPARENT, flags written when accepted, or None when it must be ignored: a new trace).
TRACEPARENTS: List[Tuple[str, str, Optional[str]]] = [
    ("valid", VALID, "01"),
    ("flags 03", f"00-{TID}-{SID}-03", "03"),
    ("flags ff: unknown bits dropped", f"00-{TID}-{SID}-ff", "03"),
    ("flags 09", f"00-{TID}-{SID}-09", "01"),
    ("uppercase trace id", f"00-{TID.upper()}-{SID}-01", None),
    ("uppercase flags", f"00-{TID}-{SID}-0F", None),
    ("all-zero trace id", f"00-{'0' * 32}-{SID}-01", None),
    ("all-zero span id", f"00-{TID}-{'0' * 16}-01", None),
    ("version ff", f"ff-{TID}-{SID}-01", None),
    ("version 00 with an extra field", f"{VALID}-extra", None),
    ("future version with an extra field", f"01-{TID}-{SID}-01-extra", "01"),
    ("future version, 55 characters", f"cc-{TID}-{SID}-01", "01"),
    ("future version, no dash after flags", f"01-{TID}-{SID}-01x", None),
    ("short", VALID[:-1], None),
    ("long trace id", f"00-{TID}0-{SID}-01", None),
    ("underscores", VALID.replace("-", "_"), None),
    ("non-hex", f"00-{TID[:-1]}g-{SID}-01", None),
    ("garbage", "garbage", None),
    ("empty", "", None),
    ("spaces around", f"  {VALID} ", "01"),
    # where Python's parsers disagreed before wire/traceparent.py was the one rule
    ("uppercase span id", f"00-{TID}-{SID.upper()}-01", None),
    ("uppercase version", f"0A-{TID}-{SID}-01", None),
    ("flags 05: unknown bit dropped", f"00-{TID}-{SID}-05", "01"),
    ("version 00, 56 characters", f"{VALID}0", None),
    ("version 00, a dash after the flags", f"{VALID}-", None),
    ("future version with two extra fields", f"fe-{TID}-{SID}-03-a-b", "03"),
    ("tab and newline around", f"\t{VALID}\n", "01"),
    ("space inside", f"00- {TID}-{SID}-01", None),
    ("double quotes around", f'"{VALID}"', None),
    ("one-digit version", f"0-{TID}-{SID}-01", None),
]
#: Not in the table: an unsampled context (flags 00) is accepted and nothing is written;
#: test_unsampled_context_writes_nothing checks it for every producer.

#: Producer -> labels it is known to get wrong (xfail, with the reason).
KNOWN_WRONG: Dict[str, Dict[str, str]] = {}   # none since the auto layer reads TRACEPARENT by the library's rule


def _begin_of(lines: List[bytes]) -> List[str]:
    begins = [_fields(line) for line in lines if line.split(b"\t")[1] == b"B"]
    assert begins, "no span written"
    return begins[0]


def _library(tmp_path: Path, tp: str) -> List[str]:
    env = clean_env(GWTRACE_DIR=str(tmp_path), TRACEPARENT=tp)
    out = subprocess.run(["bash", "-c", f'source "{LIB}"; trace_begin s; trace_end 0'], env=env,
                         capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return _begin_of(_log_lines(tmp_path / "events.log"))


def _auto(tmp_path: Path, tp: str) -> List[str]:
    script = tmp_path / "s.sh"
    script.write_text(":\n")
    env = clean_env(GWTRACE_DIR=str(tmp_path), TRACEPARENT=tp, BASH_ENV=str(AUTO), GWTRACE_AUTO_LEVEL="scripts")
    out = subprocess.run(["bash", str(script)], env=env, capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return _begin_of(_log_lines(tmp_path / "events.log"))


def _wrapper(shell: str):
    def run(tmp_path: Path, tp: str) -> List[str]:
        (tmp_path / "events.log").touch(mode=0o600)
        out = _run_wrapper(shell, tmp_path, ["true"], GWTRACE_DIR=str(tmp_path), TRACEPARENT=tp)
        assert out.returncode == 0, out.stderr
        return _begin_of(_log_lines(tmp_path / "events.log"))
    return run


def _python(tmp_path: Path, tp: str) -> List[str]:
    log = EventLog(str(tmp_path / "events.log"))
    Span(log, "s", incoming_context({"TRACEPARENT": tp}), {}).end("0")
    return _begin_of(_log_lines(tmp_path / "events.log"))


def _cli(tmp_path: Path, tp: str) -> List[str]:
    env = clean_env(GWTRACE_DIR=str(tmp_path), TRACEPARENT=tp)
    out = subprocess.run([GWTRACE, "span", "s", "--", "true"], env=env, capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return _begin_of(_log_lines(tmp_path / "events.log"))


PRODUCERS = {"library": _library, "auto": _auto, "python": _python,
             **{"wrapper " + shell: _wrapper(shell) for shell in WRAPPER_SHELLS}}


def _cases():
    for producer in PRODUCERS:
        for label, tp, flags in TRACEPARENTS:
            reason = KNOWN_WRONG.get(producer.split()[0], {}).get(label)
            marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
            yield pytest.param(producer, tp, flags, id=f"{producer}: {label}", marks=marks)


@pytest.mark.parametrize("producer, tp, flags", list(_cases()))
def test_traceparent_handling_is_the_same_everywhere(tmp_path: Path, producer: str, tp: str,
                                                     flags: Optional[str]) -> None:
    begin = PRODUCERS[producer](tmp_path, tp)
    trace, parent, remote, written_flags = begin[4], begin[6], begin[7], begin[8]
    if flags is None:
        assert (parent, remote, written_flags) == ("-", "0", "01") and trace != TID
    else:
        assert (trace, parent, remote, written_flags) == (TID, SID, "1", flags)


@pytest.mark.parametrize("tp, flags", [pytest.param(tp, flags, id=label) for label, tp, flags in TRACEPARENTS]
                         + [pytest.param(f"00-{TID}-{SID}-00", "00", id="unsampled"),
                            pytest.param(f"00-{TID}-{SID}-02", "02", id="unsampled, random")])
def test_the_python_rule_takes_the_same_traceparents(tp: str, flags: Optional[str]) -> None:
    """``wire.traceparent.parse``, which every Python reader uses (shim/context.py, the export's
    unsampled-parent link, the glidein's context, journey), on the producers' table."""
    got = traceparent.parse(tp)
    if flags is None:
        assert got is None
    else:
        assert got is not None and (got.trace_id, got.span_id, got.flags_hex) == (TID, SID, flags)
        assert got.sampled == (flags in ("01", "03")) and got.random == (flags in ("02", "03"))
        assert traceparent.parse(got.format()) == got and got.format() == f"00-{TID}-{SID}-{flags}"


def _journey_reader(tmp_path: Path, tp: str) -> Optional[Tuple[str, str]]:
    """A job ad's ``TraceParent``, as the ad readers hand it over (a ClassAd string unquoted)."""
    from gwtrace.journey.spans import assign_trace
    state = {"ad": {"TraceParent": tp}, "schedd": "s", "cluster": 1, "proc": 0, "submitted": 1}
    assign_trace(state)
    return (state["trace_id"], state["parent_span_id"]) if state["parent_span_id"] else None


def _glidein_reader(tmp_path: Path, tp: str) -> Optional[Tuple[str, str]]:
    """glidein_config's ``TRACEPARENT`` line, as the sidecar's resource sampler reads it."""
    from gwtrace.sidecar.subjects import glidein_context
    config = tmp_path / "glidein_config"
    config.write_text(f"TRACEPARENT {tp}\n" if "\n" not in tp else f"TRACEPARENT {tp.strip()}\n")
    return glidein_context(str(config))


def _link_reader(tmp_path: Path, tp: str) -> Optional[Tuple[str, str]]:
    """The job wrapper's ``gwtrace.unsampled_parent.traceparent``, as the export links it."""
    from gwtrace.export.otlp import _links
    links = _links(tp)
    return (f"{links[0].context.trace_id:032x}", f"{links[0].context.span_id:016x}") if links else None


@pytest.mark.parametrize("reader", [_journey_reader, _glidein_reader, _link_reader],
                         ids=["journey ad", "glidein_config", "export link"])
@pytest.mark.parametrize("tp, flags", [pytest.param(tp, flags, id=label) for label, tp, flags in TRACEPARENTS]
                         + [pytest.param(f"00-{TID}-{SID}-00", "00", id="unsampled")])
def test_every_python_reader_takes_the_same_traceparents(tmp_path: Path, reader, tp: str,
                                                         flags: Optional[str]) -> None:
    """The factory and sidecar readers of a traceparent accept exactly what the producers do."""
    assert reader(tmp_path, tp) == ((TID, SID) if flags is not None else None)


def test_a_typed_job_id_may_be_upper_case() -> None:
    """``gwtrace job`` takes a person's pasted TRACEPARENT in any case (the one looser reader, on purpose)."""
    from gwtrace.journey.view import parse_job_id
    assert parse_job_id(f" 00-{TID.upper()}-{SID}-01 ")["trace_id"] == TID
    with pytest.raises(ValueError):
        parse_job_id(f"00-{TID}-{SID}-01-extra")


def test_gwtrace_span_cli_takes_the_same_traceparents(tmp_path: Path) -> None:
    """The CLI (one Python start each) on a few rows: the plumbing from the environment to Span."""
    for i, (_label, tp, flags) in enumerate(TRACEPARENTS[::4]):
        d = tmp_path / str(i)
        d.mkdir()
        begin = _cli(d, tp)
        assert (begin[4] == TID, begin[6], begin[8]) == \
            ((True, SID, flags) if flags else (False, "-", "01"))


def _child_tp(producer: str, tmp_path: Path, tp: str) -> str:
    """The TRACEPARENT a child process of the producer's span sees."""
    out = tmp_path / "child_tp"
    child = f'printf %s "$TRACEPARENT" > "{out}"'
    env = clean_env(GWTRACE_DIR=str(tmp_path), TRACEPARENT=tp, PATH="/usr/bin:/bin")
    (tmp_path / "events.log").touch(mode=0o600)
    if producer == "library":
        cmd = ["bash", "-c", f'source "{LIB}"; trace_begin s; sh -c \'{child}\'; trace_end 0']
    elif producer == "auto":
        script = tmp_path / "s.sh"
        script.write_text(f"sh -c '{child}'\n")
        env.update(BASH_ENV=str(AUTO), GWTRACE_AUTO_LEVEL="scripts")
        cmd = ["bash", str(script)]
    elif producer == "python":
        env["PATH"] = clean_env()["PATH"]
        cmd = [GWTRACE, "span", "s", "--", "sh", "-c", child]
    else:
        result = _run_wrapper(producer[len("wrapper "):], tmp_path, ["sh", "-c", child],
                              GWTRACE_DIR=str(tmp_path), TRACEPARENT=tp)
        assert result.returncode == 0, result.stderr
        return out.read_text()
    result = subprocess.run(cmd, env=env, capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return out.read_text()


@pytest.mark.parametrize("producer", list(PRODUCERS))
@pytest.mark.parametrize("tp", [VALID, f"00-{TID}-{SID}-ff", "garbage"], ids=["valid", "flags ff", "invalid"])
def test_the_child_gets_the_span_as_its_parent(tmp_path: Path, producer: str, tp: str) -> None:
    """Out as well as in: the child's TRACEPARENT names the span written, with the flags written."""
    got = _child_tp(producer, tmp_path, tp)
    begin = _begin_of(_log_lines(tmp_path / "events.log"))
    assert got == f"00-{begin[4]}-{begin[5]}-{begin[8]}"


@pytest.mark.parametrize("producer", list(PRODUCERS))
def test_unsampled_context_writes_nothing(tmp_path: Path, producer: str) -> None:
    try:
        PRODUCERS[producer](tmp_path, f"00-{TID}-{SID}-00")
    except AssertionError as exc:
        assert "no span written" in str(exc)
    else:
        raise AssertionError(f"{producer} wrote a span of an unsampled trace")
    log = tmp_path / "events.log"
    assert not log.exists() or log.read_bytes() == b""


def test_every_producer_is_in_the_tables() -> None:
    """A new producer of event lines must join this test: find every file that writes ``gw1``."""
    writers = set()
    for path in list((REPO / "bash").glob("*.sh")) + list((REPO / "shim").iterdir()) + \
            list((REPO / "sidecar" / "gwtrace").rglob("*.py")):
        if path.is_file() and re.search(r"gw1\$\{|\"gw1\\t|'gw1'|gw1\$'\\t'|\"gw1\"", path.read_text(errors="replace")):
            writers.add(str(path.relative_to(REPO)))
    # gwtrace-auto-fn.sh, -frames.sh and -cmd.sh write the function and command spans of the auto layer
    # (levels above "scripts"): their names are bash function and command names.
    covered = {"bash/gwtrace.sh", "bash/gwtrace-auto.sh", "bash/gwtrace-auto-fn.sh", "bash/gwtrace-auto-frames.sh", "bash/gwtrace-auto-cmd.sh",
               "bash/gwtrace-auto-extra.sh",
               "shim/gwtrace-job-wrapper", "shim/gwtrace_setup.sh", "sidecar/gwtrace/wire/events.py"}
    assert writers and writers <= covered, writers - covered
