"""POST /v1/gwtrace/snapshot, /ui/api/now and `gwtrace now --alerts` exit statuses (issue 13)."""

from __future__ import annotations

import gzip
import json
import subprocess
import time

import pytest

from conftest import GWTRACE, clean_env
from gwtrace.server import create_app
from gwtrace.store import TraceStore
from test_live_store import plant, request, span

TOKEN = "s3cret-token"
PROTO = {"Content-Type": "application/x-protobuf"}


@pytest.fixture
def store(tmp_path):
    with TraceStore(tmp_path / "traces.db") as s:
        yield s


def test_snapshot_endpoint_stores_with_the_token_and_refuses_what_is_not_a_snapshot(store):
    client = create_app(store, token=TOKEN).test_client()
    auth = {**PROTO, "Authorization": f"Bearer {TOKEN}"}
    now = time.time()
    body = request([span("a1", "", "glidein", now - 60), span("a2", "a1", "condor", now - 30)], 1, now).SerializeToString()
    assert client.post("/v1/gwtrace/snapshot", data=body, headers=PROTO).status_code == 401
    assert store.live_snapshots() == []
    resp = client.post("/v1/gwtrace/snapshot", data=gzip.compress(body), headers={**auth, "Content-Encoding": "gzip"})
    assert resp.status_code == 200, resp.data
    assert [r["phase"] for r in store.live_snapshots()] == ["first_match"]
    beat = request([], 2, now, unchanged=True, key="nobody").SerializeToString()
    assert client.post("/v1/gwtrace/snapshot", data=beat, headers=auth).status_code == 409
    # Real spans sent here are refused (they lack gwtrace.snapshot=true), and snapshots never reach /v1/traces' data.
    from test_live_store import _otlp
    from gwtrace.wire.span import SpanRecord

    real = _otlp([SpanRecord("0af7651916cd43dd8448eb211c80319c", "b1" * 8, "", False, 1, "", "x", 1, 1, 2, "ok")])
    resp = client.post("/v1/gwtrace/snapshot", data=real.SerializeToString(), headers=auth)
    assert resp.status_code == 400 and b"not a gwtrace snapshot" in resp.data
    assert client.get("/v1/gwtrace/snapshot", headers=auth).status_code == 405
    assert store.span_count() == 0
    data = client.get("/ui/api/now", headers={"Authorization": f"Bearer {TOKEN}"}).get_json()
    assert data["totals"] == {"alive": 1, "stopped_reporting": 0, "jobs_running": 0}
    assert data["glideins"][0]["phase"] == "first_match" and data["glideins"][0]["site"] == "FNAL"
    assert client.get("/ui/api/now").status_code == 401
    assert client.get("/now").status_code == 200                    # the page is a shell: no data in it
    assert client.get("/ui/api/now?stale=-1", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 400


def now_cli(db, *args):
    return subprocess.run([GWTRACE, "now", "--store", str(db), *args], env=clean_env(), capture_output=True,
                          text=True, timeout=120)


def test_alerts_exit_status_for_cron(tmp_path):
    db = tmp_path / "traces.db"
    with TraceStore(db) as store:
        store.put_glidein_records([])
    quiet = now_cli(db, "--alerts")
    assert (quiet.returncode, quiet.stdout) == (0, "no red light\n")
    with TraceStore(db) as store:
        plant(store, time.time())
    red = now_cli(db, "--alerts")
    assert red.returncode == 1, red.stderr
    assert red.stdout.startswith("RED JUMP: 6/12 glideins failed in the last 1 h (50%) against 2% over the previous 7 days")
    assert "ALWAYS_BAD" not in red.stdout and "FINE" not in red.stdout
    assert now_cli(db, "--alerts", "--min-failures", "7").returncode == 0
    as_json = now_cli(db, "--alerts", "--format", "json")
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["health"]["red"] == ["JUMP"]
    table = now_cli(db)
    assert table.returncode == 0 and "RED   JUMP: 6/12 failed now (50%), baseline 4/200 (2%)" in table.stdout
    missing = now_cli(tmp_path / "nope.db", "--alerts")
    assert missing.returncode == 2 and missing.stderr.startswith("gwtrace now: ") and missing.stdout == ""
    assert now_cli(db, "--alerts", "--factor", "x").returncode == 2
