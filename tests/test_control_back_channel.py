"""Issue 32, the back channel from the node's side: commands in a snapshot's answer, carried out once, results sent."""

from __future__ import annotations

import json
import os
import subprocess
import sysconfig
import time
import zipapp
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

from conftest import clean_env
from fake_controller import FakeController
from test_shim_setup import gconfig, glidein, result, run_setup, setup_env  # noqa: F401 - glidein: a fixture

import gwtrace
from gwtrace.sidecar.commands import CommandRunner, parse_header, registered_scratch, results_url
from gwtrace.sidecar.snapshot import Snapshotter
from gwtrace.sidecar.snapshot_send import HttpSender
from gwtrace.sidecar.tail import MAX_TAIL_BYTES, TailRefused, file_tail


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    d = tmp_path / "execute" / "dir_1234"
    d.mkdir(parents=True)
    (d / "_condor_stderr").write_text("line 1\nexport TOKEN=abc\nsee https://u:pw@host/x\nlast line\n")
    (d / "sub").mkdir()
    (d / "sub" / "out.log").write_text("nested\n")
    return d


def test_tail_sends_the_redacted_end_of_a_file(scratch: Path) -> None:
    got = file_tail(str(scratch), "_condor_stderr", 65536)
    assert got == {"text": "line 1\n[REDACTED]\nsee https://[REDACTED]@host/x\nlast line\n", "bytes": 58,
                   "truncated": False}
    assert file_tail(str(scratch), "./sub/out.log", 100)["text"] == "nested\n"
    cut = file_tail(str(scratch), "_condor_stderr", 12)
    assert cut["truncated"] is True and cut["text"] == "last line\n"         # no half line at the cut


@pytest.mark.parametrize("path,why", [
    ("/etc/passwd", "relative"), ("../../etc/passwd", "no '..'"), ("sub/../../x", "no '..'"), ("", "non-empty"),
    ("out", "symlink"), ("sub", "regular"), ("fifo", "regular"), ("missing", "no such file"),
    ("link/x", "symlink"), (["x"], "non-empty")])
def test_tail_refuses_what_is_not_allow_listed(scratch: Path, path: Any, why: str) -> None:
    os.symlink("/etc/passwd", scratch / "out")               # a symlink leaving the directory
    os.symlink("/etc", scratch / "link")
    os.mkfifo(scratch / "fifo")                               # opened O_NONBLOCK, refused: never blocks
    begun = time.monotonic()
    with pytest.raises(TailRefused, match=why):
        file_tail(str(scratch), path, 100)
    assert time.monotonic() - begun < 1


def test_tail_of_a_huge_file_is_capped(scratch: Path) -> None:
    with open(scratch / "huge", "wb") as fh:
        fh.truncate(8 * 1024 * 1024 * 1024)                   # 8 GiB, sparse
    got = file_tail(str(scratch), "huge", 10 * MAX_TAIL_BYTES)
    assert got["truncated"] is True and got["bytes"] == 8 * 1024 ** 3 and len(got["text"]) <= MAX_TAIL_BYTES


def _runner(tmp_path: Path, scratch: Path) -> "tuple[CommandRunner, List[Any]]":
    posted: List[Any] = []
    runner = CommandRunner(str(tmp_path / "sc"), "http://127.0.0.1:9/v1/gwtrace/control/results", "glide-1",
                           post=lambda url, payload: posted.append((url, payload)))
    (tmp_path / "sc" / "control" / "scratch" / "123.0").write_text(f"{scratch}\n")
    return runner, posted


def test_commands_are_done_once_and_their_results_sent_again(tmp_path: Path, scratch: Path) -> None:
    runner, posted = _runner(tmp_path, scratch)
    header = json.dumps([{"id": "c7", "op": "level", "level": "commands", "job": None},
                         {"id": "c8", "op": "tail", "job": "123.0", "path": "_condor_stderr", "max_bytes": 10},
                         {"id": "c9", "op": "tail", "job": "123.0", "path": "/etc/passwd", "max_bytes": 10},
                         {"id": "c10", "op": "level", "level": "off", "job": "77.1"},
                         {"id": "c11", "op": "tail", "job": "9.9", "path": "x", "max_bytes": 10},
                         {"id": "c12", "op": "rm", "job": "9.9"}])
    results = runner.handle(header)
    assert [(r["id"], r["ok"]) for r in results] == [("c7", True), ("c8", True), ("c9", False), ("c10", True),
                                                      ("c11", False), ("c12", False)]
    assert results[1]["text"] == "last line\n" and results[2]["error"].startswith("path must be relative")
    assert results[4]["error"] == "job 9.9 is not running here"
    assert (tmp_path / "sc" / "level").read_text() == "commands\n"
    assert (tmp_path / "sc" / "control" / "jobs-level").read_text() == "commands\n"
    assert (tmp_path / "sc" / "control" / "job-level" / "77.1").read_text() == "off\n"
    assert posted == [("http://127.0.0.1:9/v1/gwtrace/control/results", {"key": "glide-1", "results": results})]
    (tmp_path / "sc" / "level").write_text("scripts\n")
    again = runner.handle(header)                              # resent (the results were lost, say)
    assert again == results and (tmp_path / "sc" / "level").read_text() == "scripts\n"    # not done again
    assert runner.counters == {"commands_done": 3, "commands_refused": 3, "command_results_failed": 0}


@pytest.mark.parametrize("header", ["", "not json", "{}", "[1, 2]", json.dumps([{"op": "level"}] * 3),
                                    "[" + ",".join(['{"id":"x"}'] * 1000) + "]"])
def test_a_bad_header_does_nothing(tmp_path: Path, scratch: Path, header: str) -> None:
    runner, posted = _runner(tmp_path, scratch)
    assert runner.handle(header) == [] and posted == []


def test_registered_scratch_must_be_a_real_directory_of_ours(tmp_path: Path, scratch: Path) -> None:
    runner, _ = _runner(tmp_path, scratch)
    reg = tmp_path / "sc" / "control" / "scratch"
    for job, path in (("1.0", "/"), ("2.0", "relative/dir"), ("3.0", str(tmp_path / "gone"))):
        (reg / job).write_text(path + "\n")
        assert registered_scratch(str(tmp_path / "sc"), job) is None, path
    assert registered_scratch(str(tmp_path / "sc"), "123.0") == str(scratch)
    assert parse_header("x" * 5000) == []


def test_results_url() -> None:
    assert results_url("http://h:8/gw/v1/gwtrace/snapshot") == "http://h:8/gw/v1/gwtrace/control/results"


def test_the_snapshot_answer_carries_the_commands(tmp_path: Path, scratch: Path) -> None:
    """A real snapshot sender and its Gwtrace-Commands header, a real results POST (fake controller)."""
    c = FakeController().start()
    try:
        c.commands = [{"id": "c8", "op": "tail", "job": "123.0", "path": "_condor_stderr", "max_bytes": 10}]
        sender = HttpSender(c.url + "/v1/gwtrace/snapshot", {})
        snap = Snapshotter(sender, 60.0, {}, "glide-1")
        runner = CommandRunner(str(tmp_path / "sc"), results_url(sender.url), "glide-1", env={})
        (tmp_path / "sc" / "control" / "scratch" / "123.0").write_text(f"{scratch}\n")
        snap.on_commands = runner.handle
        snap.take([], 0)
        assert snap.wait_idle()
        got = c.wait_results(1)
        snap.close()
    finally:
        c.stop()
    assert got == [{"key": "glide-1", "results": [{"id": "c8", "ok": True, "text": "last line\n", "bytes": 58,
                                                   "truncated": True}]}]


# ---- a level changed while the glidein runs is seen by the next script ------------------------------


def _step(glidein: Dict[str, Path], name: str) -> None:
    hook = str(glidein["main"] / "error_augment.sh")
    for args in (["-init"], ["-process", "0", f"main/{name}", str(glidein["base"]), "cmd", "1", "2"]):
        assert subprocess.run([hook, *args], cwd=glidein["base"], env=clean_env(), timeout=30).returncode == 0


def test_a_level_changed_mid_run_is_seen_by_the_next_script(glidein, receiver) -> None:  # noqa: F811
    c = FakeController().start()
    try:
        with glidein["config"].open("a") as f:
            f.write(f"GWTRACE_OTLP_TRACES_ENDPOINT {receiver.endpoint}\nGWTRACE_CONTROLLER {c.url}\n")
        out = run_setup(glidein, setup_env(OTEL_EXPORTER_OTLP_TIMEOUT="2000", GWTRACE_SNAPSHOT_INTERVAL="0.2",
                                           GWTRACE_SNAPSHOT_ENDPOINT=c.url + "/v1/gwtrace/snapshot"))
        assert out.returncode == 0 and result(glidein)["GWTrace"] == "on", out.stderr
        _step(glidein, "before.sh")
        c.commands = [{"id": "c1", "op": "level", "level": "off", "job": None}]
        assert c.wait_results(1)[0]["results"] == [{"id": "c1", "ok": True}]
        _step(glidein, "while_off.sh")
        c.commands = [{"id": "c2", "op": "level", "level": "functions", "job": None}]
        assert c.wait_results(2)[1]["results"] == [{"id": "c2", "ok": True}]
        _step(glidein, "after.sh")
        cleanup = glidein["base"] / ".gwms.d" / "exec" / "cleanup"
        for hook in sorted(cleanup.iterdir()):
            assert subprocess.run([str(hook), str(glidein["config"])], env=clean_env(), timeout=120).returncode == 0
    finally:
        c.stop()
    names = {s.name for s in receiver.spans}
    assert {"main/before.sh", "main/after.sh", "glidein"} <= names and "main/while_off.sh" not in names


def _launcher_with_bashlib(target: Path) -> None:
    """test_shim_setup's stand-in archive, with the site directory's .pth files read, so that the
    editable install's gwtrace.bashlib (the bash/ directory) is found by `lib --auto`."""
    src = target.parent / "launcher-bashlib"
    src.mkdir()
    paths = [str(Path(gwtrace.__file__).resolve().parent.parent)]
    (src / "__main__.py").write_text(f"import site, sys\nsys.path[:0] = {paths!r}\n"
                                     f"site.addsitedir({sysconfig.get_paths()['purelib']!r})\n"
                                     "from gwtrace.cli import main\nsys.exit(main())\n")
    target.unlink()
    zipapp.create_archive(src, target)


def test_script_env_reads_the_level_file_when_each_script_starts(glidein, receiver) -> None:  # noqa: F811
    """A glidein_startup.sh that reads GLIDEIN_SCRIPTS_BASH_ENV: the first script runs at the controller's
    level, the back channel says "off", the next script runs untraced, then "commands" again."""
    base = glidein["base"]
    _launcher_with_bashlib(glidein["main"] / "gwtrace-sidecar.pyz")
    startup = base / "glidein_startup.sh"
    startup.write_text(
        "#!/bin/bash\n# stand-in for a glidein_startup.sh that reads GLIDEIN_SCRIPTS_BASH_ENV\n"
        "echo \"GLIDEIN_STARTUP_PID $$\" >>glidein_config\n"
        "bash main/gwtrace_setup.sh \"$PWD/glidein_config\" main || exit 9\n"
        "BASH_ENV=$(grep '^GLIDEIN_SCRIPTS_BASH_ENV ' glidein_config | tail -n 1 | cut -d ' ' -f 2-)\n"
        "export BASH_ENV\n"
        "for n in 1 2 3; do\n"
        "  for _ in $(seq 200); do [[ -e go$n ]] && break; sleep 0.05; done\n"
        "  bash ./s.sh $n\n"
        "done\n")
    (base / "s.sh").write_text('echo "$1 ${GWTRACE_AUTO_LEVEL:-none}" >>levels\n')
    c = FakeController().start()
    c.answer = dict(c.answer, level="functions")
    try:
        with glidein["config"].open("a") as f:
            f.write(f"GWTRACE_OTLP_TRACES_ENDPOINT {receiver.endpoint}\nGWTRACE_CONTROLLER {c.url}\n")
        env = setup_env(OTEL_EXPORTER_OTLP_TIMEOUT="2000", GWTRACE_SNAPSHOT_INTERVAL="0.2",
                        GWTRACE_SNAPSHOT_ENDPOINT=c.url + "/v1/gwtrace/snapshot")
        with open(base / "job.err", "a") as err:
            proc = subprocess.Popen(["bash", str(startup)], cwd=base, env=env, stdout=subprocess.DEVNULL, stderr=err)
            (base / "go1").touch()
            deadline = time.monotonic() + 30
            while not (base / "levels").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            c.commands = [{"id": "c1", "op": "level", "level": "off", "job": None}]
            assert c.wait_results(1)
            (base / "go2").touch()
            while len((base / "levels").read_text().splitlines()) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            c.commands = [{"id": "c2", "op": "level", "level": "commands", "job": None}]
            assert c.wait_results(2)
            (base / "go3").touch()
            assert proc.wait(timeout=30) == 0, (base / "job.err").read_text()
        assert result(glidein)["GWTraceScripts"] == "functions"
        assert (base / "levels").read_text() == "1 functions\n2 none\n3 commands\n"
    finally:
        c.stop()
        for hook in sorted((base / ".gwms.d" / "exec" / "cleanup").iterdir()):
            subprocess.run([str(hook), str(glidein["config"])], env=clean_env(), timeout=120)


def test_results_are_posted_in_bodies_the_server_takes(tmp_path: Path, scratch: Path) -> None:
    """Three 1 MiB tails of a file whose every byte JSON escapes six-fold: each result is cut to fit,
    the bodies stay under 2 MiB."""
    (scratch / "ctl").write_bytes(b"\x01" * (1024 * 1024))
    runner, posted = _runner(tmp_path, scratch)
    header = json.dumps([{"id": f"t{i}", "op": "tail", "job": "123.0", "path": "ctl", "max_bytes": 1 << 20}
                         for i in range(3)])
    results = runner.handle(header)
    assert [r["ok"] for r in results] == [True] * 3
    bodies = [json.dumps(payload, separators=(",", ":")) for _, payload in posted]
    assert len(bodies) >= 2 and all(len(b) <= 2 * 1024 * 1024 for b in bodies)
    sent = [r for _, payload in posted for r in payload["results"]]
    assert [r["id"] for r in sent] == ["t0", "t1", "t2"] and all(r["truncated"] for r in sent)


def test_the_sidecars_snapshotter_carries_out_commands_and_counts_them(tmp_path: Path, scratch: Path) -> None:
    from gwtrace.sidecar.snapshot import make_snapshotter

    c = FakeController().start()
    try:
        c.commands = [{"id": "c3", "op": "level", "level": "scripts", "job": "5.0"}]
        snap, _ = make_snapshotter(None, {"glidein.uuid": "g-1"}, str(tmp_path / "sc"),
                                   env={"GWTRACE_SNAPSHOT_ENDPOINT": c.url + "/v1/gwtrace/snapshot"})
        snap.take([], 0)
        assert snap.wait_idle() and c.wait_results(1)
        snap.close()
    finally:
        c.stop()
    assert c.results == [{"key": "g-1", "results": [{"id": "c3", "ok": True}]}]
    assert snap.counters["commands_done"] == 1 and snap.counters["commands_refused"] == 0
    assert (tmp_path / "sc" / "control" / "job-level" / "5.0").read_text() == "scripts\n"
