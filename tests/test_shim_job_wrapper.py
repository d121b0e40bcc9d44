"""shim/gwtrace-job-wrapper: one span per HTCondor user job, in POSIX sh.

Run under dash and busybox ash, with bash on PATH and without it (the wrapper
uses bash, when there is one, to give the job SIGINT and SIGQUIT back). The
events it writes are read back with the sidecar's own parser.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Dict, List

import pytest

from conftest import REPO
from gwtrace.wire.events import Event, parse_line

WRAPPER = REPO / "shim" / "gwtrace-job-wrapper"
AD_TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
GLIDEIN_TRACEPARENT = "00-11111111111111111111111111111111-2222222222222222-01"
SHELLS = [pytest.param(["dash"], id="dash")]
if shutil.which("busybox"):
    SHELLS.append(pytest.param(["busybox", "sh"], id="busybox"))
else:  # pragma: no cover - the Makefile installs busybox
    SHELLS.append(pytest.param(["busybox", "sh"], id="busybox",
                               marks=pytest.mark.skip(reason="busybox not installed (apt-get install busybox)")))


@pytest.fixture
def node(tmp_path: Path) -> Dict[str, object]:
    """A private event log, a job ad, and a PATH without bash."""
    log_dir = tmp_path / "gw"
    log_dir.mkdir(mode=0o700)
    (log_dir / "events.log").write_text("")
    ad = tmp_path / ".job.ad"
    ad.write_text('MyType = "Job"\nClusterId = 1234\nProcId = 5\nOwner = "alice"\n'
                  'GlobalJobId = "schedd.example.org#1234.5#1700000000"\n'
                  f'TraceParent = "{AD_TRACEPARENT}"\nCmd = "/bin/job.sh"\n')
    nobash = tmp_path / "nobash"
    nobash.mkdir()
    for tool in ("sleep", "date", "od", "tr", "cat", "grep", "rm", "sh", "dash", "busybox"):
        found = shutil.which(tool)
        if found:
            (nobash / tool).symlink_to(found)
    boot_us = time.time_ns() // 1000 - int(float(Path("/proc/uptime").read_text().split()[0]) * 1e6)
    env = {"PATH": os.environ["PATH"], "GWTRACE_DIR": str(log_dir), "_CONDOR_JOB_AD": str(ad),
           "GWTRACE_GLIDEIN_TRACEPARENT": GLIDEIN_TRACEPARENT, "GWTRACE_BOOT_US": str(boot_us)}
    return {"env": env, "log": log_dir / "events.log", "nobash": str(nobash), "tmp": tmp_path}


# A pilot's starter runs the wrapper with every signal at its default and none
# blocked. A test runner may have inherited SIGTERM ignored or blocked (a CI
# agent, a supervisor): POSIX sh cannot trap a signal ignored at its start,
# and no shell can unblock one, so the wrapper passes them on to the job as
# they are (test below) and cannot forward SIGTERM; the SIGTERM test then
# waited out its job's `sleep 30` and failed. So the wrapper is started here
# as a starter would: from a clean signal state, whatever pytest inherited.
# (perl, not python: python would set LC_CTYPE in the job's environment.)
_LAUNCH = r"""use POSIX qw(SIGTERM SIG_SETMASK sigprocmask);
my $mode = shift;
for my $n (1 .. 64) {
    next if $n == 9 || $n == 19;
    POSIX::sigaction($n, POSIX::SigAction->new($mode eq "ignore" && $n == SIGTERM ? "IGNORE" : "DEFAULT"));
}
sigprocmask(SIG_SETMASK, POSIX::SigSet->new($mode eq "block" ? (SIGTERM) : ())) or die "sigprocmask: $!";
exec { $ARGV[0] } @ARGV or die "exec $ARGV[0]: $!";
"""


def started(argv: List[str], mode: str = "clean") -> List[str]:
    """ARGV run from a clean signal state, or with SIGTERM ignored ("ignore") or blocked ("block")."""
    return [shutil.which("perl") or "perl", "-e", _LAUNCH, mode, *argv]


def events(log: Path) -> List[Event]:
    return [parse_line(line) for line in log.read_bytes().splitlines()]


def wrap(shell: List[str], job: List[str], env: Dict[str, str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(started([*shell, str(WRAPPER), *job]), env=env, capture_output=True, timeout=30, **kw)


@pytest.mark.parametrize("with_bash", [True, False], ids=["bash-on-path", "no-bash"])
@pytest.mark.parametrize("shell", SHELLS)
def test_one_span_per_job_child_of_the_job_ads_trace(shell, with_bash, node) -> None:
    env = dict(node["env"], PATH=os.environ["PATH"] if with_bash else node["nobash"])
    job = ["/bin/sh", "-c", 'echo "args: $*"; echo "tp=$TRACEPARENT"; read -r l; echo "stdin: $l"; echo oops >&2; exit 3',
           "job.sh", "a b", "--secret=never-recorded"]
    out = wrap(shell, job, env, input=b"line one\n")
    assert out.returncode == 3
    assert out.stderr == b"oops\n"
    lines = out.stdout.decode().splitlines()
    assert lines[0] == "args: a b --secret=never-recorded" and lines[2] == "stdin: line one"
    begin, end = events(node["log"])
    assert (begin.kind, end.kind) == ("B", "E") and begin.name == "user_job"
    assert begin.trace_id == AD_TRACEPARENT[3:35] and begin.parent_id == AD_TRACEPARENT[36:52]
    assert begin.parent_remote is True
    assert lines[1] == f"tp=00-{begin.trace_id}-{begin.span_id}-01"
    attrs = dict(begin.attributes)
    assert attrs["htcondor.job.global_id"] == "schedd.example.org#1234.5#1700000000"
    assert attrs["htcondor.job.id"] == "1234.5" and attrs["htcondor.job.owner"] == "alice"
    assert attrs["process.executable.name"] == "sh"
    assert attrs["gwtrace.glidein.traceparent"] == GLIDEIN_TRACEPARENT
    assert "never-recorded" not in node["log"].read_text()
    assert end.span_id == begin.span_id and end.status == "3"
    assert 0 <= end.ts_us - begin.ts_us < 30_000_000


def test_without_traceparent_in_the_ad_the_job_joins_the_glideins_trace(node) -> None:
    ad = Path(node["env"]["_CONDOR_JOB_AD"])
    ad.write_text('ClusterId = 7\nOwner = "bob"\n')
    out = wrap(["dash"], ["/bin/true"], node["env"])
    assert out.returncode == 0
    begin = events(node["log"])[0]
    assert begin.trace_id == GLIDEIN_TRACEPARENT[3:35] and begin.parent_id == GLIDEIN_TRACEPARENT[36:52]
    assert dict(begin.attributes)["htcondor.job.id"] == "7.0"


def _plain(env: Dict[str, str], shell: List[str]) -> List[str]:
    proc = subprocess.Popen([*shell, str(WRAPPER), "/bin/sh", "-c", 'echo "$$ ${TRACEPARENT:-none} ${TRACESTATE:-none}"'],
                            env=env, stdout=subprocess.PIPE)
    out, _ = proc.communicate(timeout=30)
    words = out.decode().split()
    assert words[0] == str(proc.pid)            # the job *is* the wrapper process: plain exec
    return words[1:]


@pytest.mark.parametrize("shell", SHELLS)
def test_no_event_log_means_plain_exec_still_continuing_the_jobs_trace(shell, node) -> None:
    """No sidecar (no event log): no span, but the job gets the ad's TraceParent as TRACEPARENT (issue 30),
    under its "executing" span when the ad gives the run (NumShadowStarts); another trace's TRACESTATE goes."""
    from gwtrace.journey.spans import run_span_id

    env = {k: v for k, v in node["env"].items() if not k.startswith("GWTRACE_")}
    assert _plain(dict(env, TRACEPARENT=GLIDEIN_TRACEPARENT, TRACESTATE="a=b"), shell) == [AD_TRACEPARENT, "none"]
    ad = Path(env["_CONDOR_JOB_AD"])
    ad.write_text(ad.read_text() + "NumShadowStarts = 3\n")
    trace = AD_TRACEPARENT[3:35]
    assert _plain(env, shell) == [f"00-{trace}-{run_span_id(trace, 1234, 5, 3)}-01", "none"]
    assert _plain(dict(env, GWTRACE_DISABLED="1"), shell) == ["none", "none"]
    ad.write_text('ClusterId = 7\nTraceParent = "not-a-traceparent"\n')
    assert _plain(dict(env, TRACEPARENT=GLIDEIN_TRACEPARENT), shell) == [GLIDEIN_TRACEPARENT, "none"]
    del env["_CONDOR_JOB_AD"]
    assert _plain(env, shell) == ["none", "none"]


def test_usage_error_is_one_line() -> None:
    out = subprocess.run(["dash", str(WRAPPER)], capture_output=True, timeout=30)
    assert out.returncode == 2 and out.stderr.count(b"\n") == 1 and out.stdout == b""


@pytest.mark.parametrize("shell", SHELLS)
def test_sigterm_reaches_the_job_and_its_status_is_kept(shell, node) -> None:
    # No child of the job's to kill from its trap: a TERM that came right after
    # `sleep 30 &` (the test sends it as soon as "ready" is read) reached the
    # forked shell before it became sleep, caught by the inherited trap and
    # lost, and the orphaned sleep held stdout open for 30 s. A foreground
    # sleep of 0.1 s only delays the trap that much.
    job = ["/bin/sh", "-c", 'trap "echo got-term; exit 7" TERM; echo ready; while :; do sleep 0.1; done']
    proc = subprocess.Popen(started([*shell, str(WRAPPER), *job]), env=node["env"], stdout=subprocess.PIPE)
    assert proc.stdout.readline() == b"ready\n"
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 7
    assert proc.stdout.read() == b"got-term\n"
    assert time.monotonic() - sent < 5         # at once, and no orphan holds stdout
    end = events(node["log"])[-1]
    assert end.status == "7" and dict(end.attributes)["gwtrace.forwarded_signal"] == "TERM"


@pytest.mark.parametrize("shell", SHELLS)
def test_a_job_killed_by_a_signal_kills_the_wrapper_the_same_way(shell, node) -> None:
    out = wrap(shell, ["/bin/sh", "-c", "kill -SEGV $$"], dict(node["env"], PATH=node["nobash"]))
    assert out.returncode == -signal.SIGSEGV
    assert events(node["log"])[-1].status == str(128 + signal.SIGSEGV)
    assert not list(Path(node["tmp"]).glob("core*"))


def test_with_bash_the_job_gets_sigint_and_sigquit_back(node) -> None:
    job = ["/bin/sh", "-c", "grep SigIgn /proc/$$/status"]
    with_bash = wrap(["dash"], job, node["env"])
    # SIGINT (bit 1) and SIGQUIT (bit 2) are back to default; other bits are
    # whatever the test runner itself inherited (CI ignores a real-time signal).
    assert int(with_bash.stdout.split()[1], 16) & 0b110 == 0
    # POSIX sh starts a background job with SIGINT and SIGQUIT ignored (docs/shim.md)
    without = wrap(["dash"], job, dict(node["env"], PATH=node["nobash"]))
    assert int(without.stdout.split()[1], 16) & 0b110 == 0b110


@pytest.mark.parametrize("mode", ["ignore", "block"])
@pytest.mark.parametrize("with_bash", [True, False], ids=["bash-on-path", "no-bash"])
def test_sigterm_ignored_or_blocked_at_start_stays_so_for_the_job(node, mode, with_bash) -> None:
    """A pilot that starts the job with SIGTERM ignored or blocked: the job has it
    so with the wrapper as without (the wrapper cannot trap or unblock it; it
    changes nothing), and its span still ends with the job's status."""
    env = dict(node["env"]) if with_bash else dict(node["env"], PATH=node["nobash"])
    job = [shutil.which("grep"), "-E", "^Sig(Ign|Blk)", "/proc/self/status"]   # no shell: its own masks

    def term_bits(argv: List[str]) -> Dict[str, int]:
        out = subprocess.run(started(argv, mode), env=env, capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        return {line.split(":")[0]: int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1
                for line in out.stdout.splitlines()}

    plain = term_bits(["dash", "-c", 'exec "$@"', "wrapper", *job])
    assert plain == {"SigIgn": int(mode == "ignore"), "SigBlk": int(mode == "block")}
    assert term_bits(["dash", str(WRAPPER), *job]) == plain
    assert events(node["log"])[-1].status == "0"


def test_the_jobs_environment_is_unchanged_but_for_traceparent(node) -> None:
    env = dict(node["env"], BASH_ENV="/some/bash_env", TRACESTATE="vendor=x")
    dump = ["/usr/bin/env"]
    # the least a shell wrapper does: exec "$@" (sh exports PWD)
    plain = subprocess.run(["dash", "-c", 'exec "$@"', "wrapper", *dump], env=env,
                           capture_output=True, timeout=30).stdout.decode().splitlines()
    wrapped = wrap(["dash"], dump, env).stdout.decode().splitlines()
    changed = sorted({line.split("=")[0] for line in set(plain) ^ set(wrapped)})
    # TRACEPARENT is the job's span; TRACESTATE was the glidein trace's, not the job's; the job
    # gets an event log of its own, never the glidein's (docs/protocol.md, "Trust boundary")
    assert set(changed) <= {"TRACEPARENT", "TRACESTATE", "GWTRACE_SOCKET", "GWTRACE_DIR"}, changed
    assert {"TRACEPARENT", "TRACESTATE"} <= set(changed)
    assert not any(line.startswith(("TRACESTATE=", "GWTRACE_DIR=")) for line in wrapped)
    sockets = [line for line in wrapped if line.startswith("GWTRACE_SOCKET=")]
    assert all("/jobs/" in line for line in sockets), sockets
    assert "BASH_ENV=/some/bash_env" in wrapped


def test_shellcheck_posix_clean() -> None:
    if not shutil.which("shellcheck"):  # pragma: no cover
        pytest.skip("shellcheck not installed")
    for dialect in ("sh", "dash"):
        out = subprocess.run(["shellcheck", "-s", dialect, str(WRAPPER)], capture_output=True, text=True)
        assert out.returncode == 0, out.stdout


@pytest.mark.parametrize("shell", SHELLS)
def test_the_span_is_a_child_of_the_jobs_executing_span(shell, node) -> None:
    """With NumShadowStarts in the ad, the parent is the "executing" span `gwtrace ingest --condor-log`
    makes for that run (docs/journey.md): both derive its id from trace, cluster.proc and run."""
    from gwtrace.journey.spans import run_span_id

    ad = Path(node["env"]["_CONDOR_JOB_AD"])
    ad.write_text(ad.read_text() + "NumShadowStarts = 2\n")
    assert wrap(shell, ["/bin/true"], dict(node["env"])).returncode == 0
    begin, _ = events(node["log"])
    trace = AD_TRACEPARENT[3:35]
    assert begin.trace_id == trace and begin.parent_id == run_span_id(trace, 1234, 5, 2)
    assert dict(begin.attributes)["htcondor.run"] == 2
    (node["log"]).write_text("")
    env = dict(node["env"], PATH=node["nobash"])          # no sha256sum: the TraceParent's span, as before
    assert wrap(shell, ["/bin/true"], env).returncode == 0
    begin, _ = events(node["log"])
    assert begin.parent_id == AD_TRACEPARENT[36:52]


@pytest.mark.parametrize("shell", SHELLS)
def test_the_job_is_registered_for_resource_sampling_while_it_runs(shell, node) -> None:
    """resources/TRACE-SPAN names the wrapper's pid, the job's id, owner and whole-number requests and the
    interval it asked for (docs/resources.md); an expression is left out; the file goes with the job."""
    resources = node["log"].parent / "resources"
    resources.mkdir(mode=0o700)
    ad = Path(node["env"]["_CONDOR_JOB_AD"])
    ad.write_text(ad.read_text() + "RequestCpus = 3\nRequestMemory = ifThenElse(MemoryUsage > 2000, 4000, 2000)\n")
    env = dict(node["env"], PATH=node["nobash"], GWTRACE_JOB_RESOURCE_INTERVAL="2")
    out = wrap(shell, ["/bin/sh", "-c", f'cat "{resources}"/*; echo "ppid=$PPID"'], env)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.decode().splitlines()
    begin = events(node["log"])[0]
    assert lines[:4] == [f"pid={lines[-1][5:]}", "job_id=1234.5", "owner=alice", "request_cpus=3"]
    assert lines[4:] == ["interval=2", lines[-1]]            # no request_memory_mb: an expression
    assert lines[-1] == f"ppid={begin.pid}"                   # the wrapper, parent of the job
    assert list(resources.iterdir()) == []


def test_no_resources_directory_no_registration(node) -> None:
    out = wrap(["dash"], ["/bin/sh", "-c", "exit 0"], node["env"])
    assert out.returncode == 0 and not (node["log"].parent / "resources").exists()
