"""A failing step in its own words (issue 30 §1): every span that ends in error carries an
``exception`` event with what its process wrote to stderr just before (the last lines, bounded,
redacted) and where it failed (``code.line.number``, ``code.file.path``, the function or the
failing command), with no change to the traced script.

Everything runs for real where it can: a sidecar exporting to an OTLP receiver, ``gwtrace run``
at every level, the job wrapper under dash and busybox; the unit tests hold the bounds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Dict, List

import pytest

from conftest import GWTRACE, REPO, clean_env
from test_shim_setup import glidein  # noqa: F401  (the fake glidein directory)
from gwtrace.wire.span import SpanRecord
from gwtrace.sidecar.failure import FailureNotes, make_stderr_dir, register, tail_lines

WRAPPER = REPO / "shim" / "gwtrace-job-wrapper"
AUTO = REPO / "bash" / "gwtrace-auto.sh"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
GLIDEIN = "00f067aa0ba902b7"

#: The issue's own example: a function whose sed fails, then more output after it failed.
FAILING = """\
fix_config() {
  echo "patching config" >&2
  sed -e '/unterminated' /dev/null
}
echo start
echo "noise before the call" >&2
sleep 0.4
fix_config
sleep 0.4
echo "then: password=hunter2 in a later line" >&2
exit 3
"""

SED = "sed: -e expression #1, char 13: unterminated address regex"


def _exception(span) -> Dict[str, object]:
    """The one exception event of a span the OTLP receiver got, as it was exported."""
    found = [attrs for name, _, attrs in span.events if name == "exception"]
    assert len(found) == 1, (span.name, span.events)
    return found[0]


# --- the sidecar's part, unit ---------------------------------------------------------------

def _span(span_id: str, parent: str = "-", status: str = "error", start: int = 1, end: int = 2) -> SpanRecord:
    return SpanRecord(TRACE, span_id, parent, False, 1, "", "s", start, 7, end, status, "exit code 1",
                      {"process.exit.code": 1})


def test_the_tail_is_bounded_to_20_lines_and_4_kb(tmp_path: Path) -> None:
    err = tmp_path / "err"
    err.write_text("".join(f"line {i}\n" for i in range(100)))
    assert tail_lines(str(err)) == [f"line {i}" for i in range(80, 100)]
    err.write_text("x" * 3000 + "\n" + "y" * 3000 + "\n" + "z" * 5000)
    assert tail_lines(str(err)) == ["z" * 4096]        # one line longer than the bound: its last 4 KB
    err.write_text("a" * 3000 + "\n" + "b" * 3000 + "\nlast\n")
    assert tail_lines(str(err)) == ["b" * 3000, "last"]
    lines = tail_lines(str(err))
    assert sum(len(x) + 1 for x in lines) <= 4096 and "aaa" not in "".join(lines)   # a cut line is dropped


def test_a_secret_in_the_tail_is_redacted(tmp_path: Path) -> None:
    err = tmp_path / "err"
    err.write_text("ok line\nmysql --password=hunter2 db\nAuthorization: Bearer abc\n"
                   "clone https://user:pw@example.org/r.git\n")
    assert tail_lines(str(err)) == ["ok line", "[REDACTED]", "[REDACTED]",
                                    "clone https://[REDACTED]@example.org/r.git"]


def test_a_fifo_or_a_missing_file_gives_nothing_and_never_blocks(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    started = time.monotonic()
    assert tail_lines(str(fifo)) == [] and tail_lines(str(tmp_path / "none")) == []
    assert time.monotonic() - started < 1


def test_the_nearest_registered_ancestor_gives_the_tail_and_its_end_forgets_it(tmp_path: Path) -> None:
    state = tmp_path / "state"
    make_stderr_dir(str(state))
    err = tmp_path / "err"
    err.write_text("before\nsed: boom\n")
    root, mid, leaf = "1111111111111111", "2222222222222222", "3333333333333333"
    assert register(str(state), TRACE, root, str(err))
    notes = FailureNotes(str(state))
    open_spans = {(TRACE, root): _span(root, status="unset"), (TRACE, mid): _span(mid, root, "unset")}
    failed = _span(leaf, mid)
    failed.attributes.update({"code.line.number": 3, "code.file.path": "/x.sh", "code.function.name": "f"})
    notes.on_finished(failed, open_spans)
    [(name, ts, attrs)] = failed.events
    assert name == "exception" and ts == failed.end_us
    assert attrs["exception.message"] == "before\nsed: boom" and attrs["code.line.number"] == 3
    assert attrs["code.function.name"] == "f" and attrs["exception.type"] == "exit code 1"
    assert failed.lines is None                       # journaled with the event, not as its lines
    ok = _span(leaf, mid, status="ok")
    notes.on_finished(ok, open_spans)
    assert ok.events == []                            # a span that ends well gets nothing
    root_span = _span(root, status="ok")
    root_span.attributes["gwtrace.stderr.registered"] = True
    notes.on_finished(root_span, {})
    assert not (state / "stderr" / f"{TRACE}-{root}").exists()


def test_lines_before_the_registration_are_not_the_spans(tmp_path: Path) -> None:
    """`gwtrace run cmd 2>>old.log`: what the log held before is never a span's."""
    state = tmp_path / "state"
    make_stderr_dir(str(state))
    err = tmp_path / "old.log"
    err.write_text("yesterday's error\n")
    root = "1111111111111111"
    assert register(str(state), TRACE, root, str(err), err.stat().st_size)
    with open(err, "a") as f:
        f.write("today's error\n")
    notes = FailureNotes(str(state))
    failed = _span("2222222222222222", root)
    notes.on_finished(failed, {})
    assert failed.events[0][2]["exception.message"] == "today's error"


def test_a_span_of_an_unregistered_trace_still_says_where(tmp_path: Path) -> None:
    notes = FailureNotes(str(tmp_path))
    span = _span("4444444444444444")
    span.attributes.update({"gwtrace.failed.command": "sed", "code.line.number": 9})
    notes.on_finished(span, {})
    [(_, _, attrs)] = span.events
    assert attrs == {"exception.type": "sed", "exception.message": "exit code 1", "code.line.number": 9,
                     "gwtrace.failed.command": "sed"}


# --- end to end -----------------------------------------------------------------------------

@pytest.mark.parametrize("level", ["scripts", "functions", "commands"])
def test_gwtrace_run_at_every_level(sidecar, receiver, tmp_path: Path, level: str) -> None:
    env = sidecar.start()
    script = tmp_path / "job.sh"
    script.write_text(FAILING)
    err = tmp_path / "stderr.txt"
    with open(err, "wb") as stderr:
        out = subprocess.run([GWTRACE, "run", "--level", level, "bash", str(script)], env=env,
                             stdout=subprocess.PIPE, stderr=stderr, timeout=60)
    assert out.returncode == 3 and out.stdout == b"start\n"
    assert err.read_text() == ("noise before the call\npatching config\n" + SED +
                               "\nthen: password=hunter2 in a later line\n")   # untouched
    assert sidecar.stop().returncode == 0
    want = 4 if level == "commands" else 3
    spans: Dict[str, List] = {}
    for s in receiver.wait_for(want, timeout=30):
        spans.setdefault(s.name, []).append(s)
    fix = _exception(spans["fix_config"][0])
    assert fix["code.line.number"] == 8 and fix["code.file.path"] == str(script)
    assert fix["code.function.name"] == "fix_config"
    assert fix["exception.message"] == "patching config\n" + SED      # not the later lines
    run = _exception(spans["bash"][0])                                 # the run's own span: all of it
    assert run["exception.message"].endswith(SED + "\n[REDACTED]") and "hunter2" not in run["exception.message"]
    if level == "commands":
        sed = _exception(spans["sed"][0])
        assert sed["code.line.number"] == 3 and sed["gwtrace.failed.command"] == "sed"
        assert sed["exception.type"] == "sed" and sed["exception.message"].endswith(SED)


SHELLS = [pytest.param(["dash"], id="dash")]
SHELLS.append(pytest.param(["busybox", "sh"], id="busybox", marks=pytest.mark.skipif(
    not shutil.which("busybox"), reason="busybox not installed")))


@pytest.mark.parametrize("shell", SHELLS)
def test_the_job_wrapper_gives_the_jobs_stderr_to_its_failing_spans(sidecar, receiver, tmp_path: Path,
                                                                     shell: List[str]) -> None:
    env = sidecar.start()
    script = tmp_path / "job.sh"
    script.write_text(FAILING)
    condor_err = tmp_path / "_condor_stderr"
    env_job = dict(env, TRACEPARENT=f"00-{TRACE}-{GLIDEIN}-01", _CONDOR_STDERR=str(condor_err),
                   BASH_ENV=str(AUTO), GWTRACE_AUTO_LEVEL="functions")
    with open(condor_err, "wb") as stderr:
        out = subprocess.run([*shell, str(WRAPPER), "bash", str(script)], env=env_job,
                             stdout=subprocess.PIPE, stderr=stderr, timeout=60)
    assert out.returncode == 3 and out.stdout == b"start\n"
    assert sidecar.stop().returncode == 0
    spans = {s.name: s for s in receiver.wait_for(3, timeout=30)}
    job = _exception(spans["user_job"])
    assert job["exception.type"] == "bash"
    assert job["exception.message"].endswith(SED + "\n[REDACTED]")
    fix = _exception(spans["fix_config"])
    assert fix["code.line.number"] == 8 and fix["exception.message"] == "patching config\n" + SED
    assert not list((Path(env["GWTRACE_DIR"]) / "stderr").iterdir())     # the registration went with its span


# --- where people look: gwtrace job, the store's Jaeger view --------------------------------

def _job_store(tmp_path: Path) -> Path:
    """Job 77.0's journey (test_journey's generator), and its wrapper's span failed with the sidecar's
    exception event, as the sidecar exports it."""
    import journey_gen as gen
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource

    from gwtrace.export.otlp import to_readable_spans
    from gwtrace.journey.spans import run_span_id
    from gwtrace.store import TraceStore
    from test_journey import T0, ingest

    parent = "00f067aa0ba902b7"
    log = tmp_path / "user.log"
    log.write_text(gen.full_journey(77, 0, T0))
    ads = tmp_path / "job.ad"
    ads.write_text(f'ClusterId = 77\nProcId = 0\nTraceParent = "00-{TRACE}-{parent}-01"\nNumShadowStarts = 2\n')
    db = tmp_path / "traces.db"
    ingest(db, log, ads=[ads], schedd="submit.example.org")
    failure = {"exception.type": "bash", "exception.message": "patching config\n" + SED,
               "code.line.number": 8, "code.file.path": "/srv/job.sh", "code.function.name": "fix_config",
               "gwtrace.stderr.lines": 2}
    wrapper = SpanRecord(trace_id=TRACE, span_id="aaaaaaaaaaaaaaa1", parent_id=run_span_id(TRACE, 77, 0, 2),
                         parent_remote=True, flags=1, tracestate="", name="user_job", start_us=(T0 + 610) * 10**6,
                         pid=1, end_us=(T0 + 690) * 10**6, status="error", status_message="exit code 3",
                         attributes={"htcondor.job.id": "77.0", "process.exit.code": 3},
                         events=[("exception", (T0 + 690) * 10**6, failure)])
    with TraceStore(db) as store:
        store.ingest(encode_spans(to_readable_spans([wrapper], Resource({"service.name": "glidein"}))))
    return db


def test_gwtrace_job_prints_where_and_the_stderr_under_the_failed_step(tmp_path: Path) -> None:
    import io

    from gwtrace.cli.job import main as job_main

    db = _job_store(tmp_path)
    out = io.StringIO()
    assert job_main(["77.0", "--store", str(db)], out) == 0
    lines = out.getvalue().splitlines()
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("user_job"))
    assert "ERROR" in lines[at]
    indent = len(lines[at]) - len(lines[at].lstrip()) + 4
    assert lines[at + 1:at + 4] == [" " * indent + "at /srv/job.sh:8 in fix_config",
                                    " " * indent + "| patching config", " " * indent + "| " + SED]


def test_the_jaeger_api_carries_the_exception_event_as_a_log(tmp_path: Path) -> None:
    from gwtrace.server import create_app
    from gwtrace.store import TraceStore

    db = _job_store(tmp_path)
    with TraceStore(db, create=False) as store:
        answer = create_app(store).test_client().get(f"/api/traces/{TRACE}")
        assert answer.status_code == 200
        [trace] = answer.get_json()["data"]
    [job] = [s for s in trace["spans"] if s["operationName"] == "user_job"]
    [log] = job["logs"]
    fields = {f["key"]: f["value"] for f in log["fields"]}
    assert fields["event"] == "exception" and fields["exception.message"] == "patching config\n" + SED
    assert fields["code.line.number"] == 8


# --- glidein scripts: the step hook's span gets the glidein's stderr tail ---------------------

def test_a_failing_glidein_step_gets_the_glideins_stderr_tail(glidein, receiver) -> None:
    from test_shim_setup import run_setup, setup_env

    config = glidein["config"]
    with config.open("a") as f:
        f.write(f"GWTRACE_OTLP_TRACES_ENDPOINT {receiver.endpoint}\n")
    out = run_setup(glidein, setup_env(OTEL_EXPORTER_OTLP_TIMEOUT="2000"))
    assert out.returncode == 0, out.stderr
    base, hook = glidein["base"], [str(glidein["main"] / "error_augment.sh")]
    env = clean_env()
    assert subprocess.run(hook + ["-init"], cwd=base, env=env, timeout=30).returncode == 0
    # the script, as glidein_startup.sh runs it: its stderr is the glidein's .err
    with open(base / "job.err", "a") as err:
        err.write("check_blacklist: node wn042 is blacklisted\nsecret=hunter2\n")
    (base / "otrb_output.xml").write_text("<OSGTestResult><result><status>ERROR</status></result>"
                                          "<detail>Node is blacklisted</detail></OSGTestResult>")
    assert subprocess.run(hook + ["-process", "1", "main/check_blacklist.sh", str(base), "cmd", "1", "2"],
                          cwd=base, env=env, timeout=30).returncode == 0
    for step in sorted((base / ".gwms.d" / "exec" / "cleanup").iterdir()):
        assert subprocess.run([str(step), str(config)], env=env, timeout=120).returncode == 0
    spans = {s.name: s for s in receiver.spans}
    step = spans["main/check_blacklist.sh"]
    failure = _exception(step)
    assert failure["exception.message"] == "check_blacklist: node wn042 is blacklisted\n[REDACTED]"
    assert failure["gwtrace.failed.command"] == "check_blacklist.sh" and failure["gwtrace.stderr.lines"] == 2
    assert step.status_message == "Node is blacklisted"           # GlideinWMS's <detail> stays the message
    sidecar_dir = Path([line.split(" ", 1)[1] for line in config.read_text().splitlines()
                        if line.startswith("GWTRACE_DIR ")][-1])
    assert not (sidecar_dir / "stderr").exists() or not list((sidecar_dir / "stderr").iterdir())
