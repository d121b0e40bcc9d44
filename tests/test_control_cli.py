"""``gwtrace control``: on a store file as an admin, and against a running ``gwtrace serve`` — including a file's
tail asked of a running job through the back channel, end to end over loopback."""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator, List, Tuple

import pytest
import requests

from conftest import GWTRACE, clean_env
from gwtrace.cli import main as gwtrace_main
from gwtrace.store import TraceStore
from test_live_store import request, span

SERVE = "import sys; from gwtrace.cli.serve import main; sys.exit(main(sys.argv[1:]))"


def run(capsys: Any, *argv: str) -> Tuple[int, str, str]:
    code = gwtrace_main(["control", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = tmp_path / "traces.db"
    TraceStore(path).close()
    return str(path)


def test_admin_on_a_store_file_sets_lists_explains_and_removes(capsys: Any, db: str) -> None:
    code, out, _ = run(capsys, "--store", db, "set", "site=S1", "--level", "off", "--reason", "disk full",
                       "--expires", "2h")
    assert code == 0 and out.startswith("set r1     site=S1  level=off ratio=-") and "disk full" in out
    assert run(capsys, "--store", db, "set", "owner=alice", "--level", "commands", "--ratio", "0.5")[0] == 0
    code, out, _ = run(capsys, "--store", db, "list")
    assert code == 0 and [line.split()[0] for line in out.splitlines()] == ["r1", "r2"]
    code, out, _ = run(capsys, "--store", db, "explain", "site=S1", "owner=alice")
    lines = out.splitlines()
    assert lines[0] == "level=commands sample_ratio=0.5 rule=r2"      # an admin's rule: not a user's, not capped
    assert lines[2].split()[0] == "r2" and "lost level: less specific than r2" in lines[3]
    code, out, _ = run(capsys, "--format", "json", "--store", db, "explain", "site=S1")
    assert json.loads(out)["level"] == "off"
    assert run(capsys, "--store", db, "rm", "r1")[0] == 0
    code, out, _ = run(capsys, "--store", db, "audit")
    actions = [line.split()[-2:] for line in out.splitlines()]
    assert actions == [["rule.set", "r1"], ["rule.set", "r2"], ["rule.remove", "r1"]]


def test_operation_rules_are_set_listed_and_explained(capsys: Any, db: str) -> None:
    assert run(capsys, "--store", db, "set", "site=S1", "--ratio", "0.2")[0] == 0
    code, out, _ = run(capsys, "--store", db, "set", "site=S1", "--operation", "cmsRun", "--ratio", "0.9",
                       "--reason", "look closer")
    assert code == 0 and out.startswith("set r2     site=S1 operation=cmsRun  level=- ratio=0.9")
    code, out, _ = run(capsys, "--store", db, "list")
    assert out.splitlines()[1].startswith("r2     site=S1 operation=cmsRun  level=- ratio=0.9")
    code, out, _ = run(capsys, "--store", db, "explain", "site=S1", "--operation", "cmsRun")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "level=- sample_ratio=0.2 rule=r1"
    assert lines[2] == "operation cmsRun: sample_ratio=0.9 rule=r2: sample_ratio 0.9 for operation cmsRun from r2: " \
                       "look closer"
    assert lines[3].split() == ["r2", "won", "operation", "cmsRun"]
    code, out, _ = run(capsys, "--format", "json", "--store", db, "explain", "site=S1", "--operation", "merge")
    assert json.loads(out)["operation"]["why"] == "no operation rule for merge: the service's ratio applies"


def test_an_old_store_keeps_its_rules_and_takes_operation_rules(tmp_path: Path, capsys: Any) -> None:
    """A store made before operation rules (the controller's tables at version 1) is migrated, its rules kept."""
    path = tmp_path / "old.db"
    TraceStore(path).close()
    assert run(capsys, "--store", str(path), "list")[0] == 0             # the controller's tables made
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("DROP TABLE control_rules")
        conn.execute("CREATE TABLE control_rules (n INTEGER PRIMARY KEY AUTOINCREMENT, scope TEXT NOT NULL, "
                     "level TEXT, sample_ratio REAL, expires REAL, reason TEXT NOT NULL, set_by TEXT NOT NULL, "
                     "role TEXT NOT NULL, created REAL NOT NULL)")
        conn.execute("INSERT INTO control_rules (scope, level, sample_ratio, expires, reason, set_by, role, created) "
                     "VALUES ('{\"site\": \"S1\"}', 'off', NULL, NULL, 'old', 'root', 'admin', 1.0)")
        conn.execute("UPDATE store_parts SET version = 1 WHERE name = 'controller'")
    conn.close()
    code, out, err = run(capsys, "--store", str(path), "list")
    assert code == 0, err
    assert out.startswith("r1     site=S1  level=off ratio=-") and "old" in out
    assert run(capsys, "--store", str(path), "set", "--operation", "cmsRun", "--ratio", "0.5")[0] == 0
    code, out, _ = run(capsys, "--store", str(path), "list")
    assert [line.split()[:2] for line in out.splitlines()] == [["r1", "site=S1"], ["r2", "(everything)"]]
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT version FROM store_parts WHERE name = 'controller'").fetchone() == (2,)
    conn.close()


@pytest.mark.parametrize("argv, status, words", [
    (["set", "site"], 2, "is not FIELD=VALUE"),
    (["set", "colour=red", "--level", "off"], 2, "is not FIELD=VALUE"),
    (["set", "site=S1", "--level", "loud"], 1, "level must be one of"),
    (["set", "site=S1", "--level", "off", "--expires", "5x"], 2, "length of time"),
    (["set", "site=S1", "--ratio", "lots"], 2, "--ratio"),
    (["set", "site=S1"], 1, "sets a level, a sample_ratio or both"),
    (["set", "site=S1", "--operation", "cmsRun", "--level", "off"], 1, "an operation rule sets only a sample_ratio"),
    (["set", "site=S1", "--operation", "", "--ratio", "0.5"], 1, "operation is empty"),
    (["explain", "site=S1", "--operation", "a\x1bb"], 1, "operation holds control characters"),
    (["rm", "r99"], 1, "no rule r99"),
    (["tail", "nokey", "1.0", "x"], 1, "no live glidein"),
])
def test_bad_input_is_one_clear_line(capsys: Any, db: str, argv: List[str], status: int, words: str) -> None:
    code, out, err = run(capsys, "--store", db, *argv)
    assert code == status and out == ""
    assert len(err.strip().splitlines()) == 1 and words in err and err.startswith("gwtrace control: ")


def test_nowhere_to_talk_to_and_no_store_are_one_line(capsys: Any, tmp_path: Path) -> None:
    code, _, err = run(capsys, "list")
    assert code == 2 and "--server URL" in err
    code, _, err = run(capsys, "--store", str(tmp_path / "none.db"), "list")
    assert code == 1 and len(err.splitlines()) == 1 and err.startswith("gwtrace control: no store")
    assert not (tmp_path / "none.db").exists()          # reading never makes an empty store


def test_an_admin_sets_the_default_before_serve_ever_ran(capsys: Any, tmp_path: Path) -> None:
    db = str(tmp_path / "fresh.db")
    code, out, _ = run(capsys, "--store", db, "set", "--level", "scripts", "--ratio", "0.1", "--reason", "default")
    assert code == 0 and out.startswith("set r1 ")
    code, out, _ = run(capsys, "--store", db, "list")
    assert code == 0 and "level=scripts ratio=0.1" in out


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, "-c", SERVE, "--port", "0", "--db", str(tmp_path / "srv.db")],
                            stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    m = re.search(r"listening on (http://\S+) ", line)
    assert m, line
    yield m.group(1)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=20)


def test_against_serve_and_a_jobs_file_tail_through_the_back_channel(server: str, tmp_path: Path) -> None:
    cli = [GWTRACE, "control", "--server", server]
    env = clean_env()
    done = subprocess.run(cli + ["set", "site=FNAL", "--level", "functions"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "by local (admin)" in done.stdout                   # tokenless loopback: the caller is an admin
    now = time.time()
    snap = request([span("a1", "", "glidein", now - 60),
                    span("a2", "a1", "user_job", now - 30, **{"htcondor.job.id": "7.0"})], 1, now, key="u-1")
    proto = {"Content-Type": "application/x-protobuf"}
    assert requests.post(server + "/v1/gwtrace/snapshot", data=snap.SerializeToString(), headers=proto,
                         timeout=10).status_code == 200
    tail = subprocess.Popen(cli + ["tail", "u-1", "7.0", "_condor_stderr", "--wait", "30"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        commands: list = []
        deadline = time.monotonic() + 30
        while not commands and time.monotonic() < deadline:            # the node's next snapshot answer
            answer = requests.post(server + "/v1/gwtrace/snapshot", data=snap.SerializeToString(), headers=proto,
                                   timeout=10)
            commands = json.loads(answer.headers.get("Gwtrace-Commands", "[]"))
            time.sleep(0.2)
        assert commands and commands[0]["op"] == "tail" and commands[0]["path"] == "_condor_stderr"
        result = {"id": commands[0]["id"], "ok": True, "text": "oom at step 3\n\x1b]0;PWNED\x07", "bytes": 30}
        assert requests.post(server + "/v1/gwtrace/control/results", json={"key": "u-1", "results": [result]},
                             timeout=10).json() == {"accepted": 1}
        out, err = tail.communicate(timeout=30)
    finally:
        if tail.poll() is None:
            tail.kill()
    assert tail.returncode == 0, err
    assert out.startswith("oom at step 3\n") and "\x1b" not in out             # a job's bytes are escaped
    level = subprocess.run(cli + ["level", "u-1", "commands", "--job", "7.0"], env=env, capture_output=True,
                           text=True, timeout=60)
    assert level.returncode == 0 and level.stdout.startswith("queued c2: u-1 level commands for job 7.0")
    answer = requests.post(server + "/v1/gwtrace/snapshot", data=snap.SerializeToString(), headers=proto, timeout=10)
    assert json.loads(answer.headers["Gwtrace-Commands"]) == [{"id": "c2", "op": "level", "level": "commands",
                                                                "job": "7.0"}]
    audit = subprocess.run(cli + ["audit"], env=env, capture_output=True, text=True, timeout=60).stdout
    assert [line.split()[-2] for line in audit.splitlines()] == ["rule.set", "command.queue", "command.result",
                                                                 "command.queue"]


def test_operation_rules_against_serve(server: str) -> None:
    cli = [GWTRACE, "control", "--server", server]

    def control(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(cli + list(argv), env=clean_env(), capture_output=True, text=True, timeout=60)

    done = control("set", "owner=alice", "--operation", "cmsRun", "--ratio", "0.5")
    assert done.returncode == 0 and "owner=alice operation=cmsRun  level=- ratio=0.5" in done.stdout, done.stderr
    out = control("explain", "owner=alice", "--operation", "cmsRun").stdout.splitlines()
    assert out[2].startswith("operation cmsRun: sample_ratio=0.5 rule=r1: sample_ratio 0.5 for operation cmsRun")
    answer = requests.get(server + "/api/sampling", params={"service": "cmsRun;owner=alice"}, timeout=10).json()
    assert answer["operationSampling"]["perOperationStrategies"] == [
        {"operation": "cmsRun", "probabilisticSampling": {"samplingRate": 0.5}}]
    refused = control("set", "owner=alice", "--operation", "cmsRun", "--level", "off")
    assert refused.returncode == 1 and refused.stderr.startswith("gwtrace control: 400: an operation rule sets only")
    assert len(refused.stderr.splitlines()) == 1


def test_a_refusal_from_the_server_is_one_line(server: str) -> None:
    done = subprocess.run([GWTRACE, "control", "--server", server, "rm", "r5"], env=clean_env(),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr.strip() == "gwtrace control: 404: no rule r5"
    down = subprocess.run([GWTRACE, "control", "--server", "http://127.0.0.1:9", "list"], env=clean_env(),
                          capture_output=True, text=True, timeout=60)
    assert down.returncode == 1 and down.stderr.startswith("gwtrace control: cannot reach http://127.0.0.1:9")


@pytest.mark.parametrize("extra, words", [
    (["--control-issuer", "https://iam.example.org"], "go together"),
    (["--control-issuer", "http://iam.example.org", "--control-audience", "a", "--control-roles", "{roles}"],
     "must be https://"),
    (["--control-issuer", "https://iam.example.org", "--control-audience", "a", "--control-roles", "{missing}"],
     "cannot read the role map"),
])
def test_serve_refuses_bad_controller_options_in_one_line(tmp_path: Path, extra: List[str], words: str) -> None:
    roles = tmp_path / "roles.json"
    roles.write_text("{}")
    argv = [a.format(roles=roles, missing=tmp_path / "none.json") for a in extra]
    done = subprocess.run([sys.executable, "-c", SERVE, "--port", "0", "--db", str(tmp_path / "t.db"), *argv],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and words in done.stderr


def test_serve_with_an_issuer_takes_peoples_tokens_and_the_pilots_token(tmp_path: Path) -> None:
    from control_issuer import AUDIENCE, ROLE_MAP, Issuer

    issuer = Issuer()
    roles = tmp_path / "roles.json"
    roles.write_text(json.dumps(ROLE_MAP))
    env = dict(clean_env(), GWTRACE_SERVER_TOKEN="pilot-secret")
    proc = subprocess.Popen([sys.executable, "-c", SERVE, "--port", "0", "--db", str(tmp_path / "t.db"),
                             "--control-issuer", issuer.url, "--control-audience", AUDIENCE,
                             "--control-roles", str(roles)], stderr=subprocess.PIPE, text=True, env=env)
    try:
        m = re.search(r"listening on (http://\S+) ", proc.stderr.readline())
        assert m
        url = m.group(1)
        cli = [GWTRACE, "control", "--server", url]
        bob = dict(clean_env(), BEARER_TOKEN=issuer.token("bob", groups=["/vo/sites/S1"]))
        done = subprocess.run(cli + ["set", "site=S1", "--level", "off"], env=bob, capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0 and "by bob (siteadmin)" in done.stdout, done.stderr
        refused = subprocess.run(cli + ["set", "site=S2", "--level", "off"], env=bob, capture_output=True,
                                 text=True, timeout=60)
        assert refused.returncode == 1 and refused.stderr.startswith("gwtrace control: 403: a site admin sets")
        pilot = subprocess.run(cli + ["--token", "pilot-secret", "list"], env=clean_env(), capture_output=True,
                               text=True, timeout=60)
        assert pilot.returncode == 1 and "403" in pilot.stderr
        answer = requests.post(url + "/v1/gwtrace/decide", json={"subject": "glidein", "site": "S1"},
                               headers={"Authorization": "Bearer pilot-secret"}, timeout=10).json()
        assert (answer["level"], answer["rule"]) == ("off", "r1")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
        issuer.close()
