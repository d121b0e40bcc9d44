"""Errors are answers, not tracebacks (issue 28): numbers out of range are a 400 in one line; a store that
is missing or is not a database is one line saying what to do."""

from __future__ import annotations

import random
import subprocess
import time

import pytest

import synthetic
from conftest import GWTRACE, clean_env
from gwtrace.server import create_app
from gwtrace.store import TraceStore

HUGE = ["100000000000000000000000", "-100000000000000000000000", "9" * 400, "1e23", "inf", "nan", "1e309"]


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    store = TraceStore(tmp_path_factory.mktemp("errors") / "traces.db")
    store.ingest(synthetic.glidein_trace(random.Random(1), time.time_ns(), uuid="g1", site="CERN", n_jobs=3))
    yield create_app(store).test_client()
    store.close()


@pytest.mark.parametrize("value", HUGE)
@pytest.mark.parametrize("url", [
    "/api/traces?service=glidein&start={}", "/api/traces?service=glidein&end={}",
    "/api/traces?service=glidein&minDuration={}h", "/api/traces?service=glidein&maxDuration={}s",
    "/ui/api/search?start={}", "/ui/api/search?end={}", "/ui/api/search?minDuration={}h",
    "/ui/api/search?lookback={}h", "/ui/api/accounting?since={}", "/ui/api/accounting?until={}",
    "/ui/api/glidein-records?since={}", "/ui/api/analysis?since={}", "/ui/api/hints?until={}",
    "/ui/api/outliers?since={}", "/ui/api/now?window={}", "/ui/api/now?min_failures={}", "/ui/api/now?stale={}",
])
def test_numbers_out_of_range_are_a_400(client, url, value):
    resp = client.get(url.format(value))
    assert resp.status_code in (200, 400), resp.get_data(as_text=True)[:200]
    if resp.status_code == 400:
        text = resp.get_data(as_text=True)
        assert "\n" not in text.strip() and "Traceback" not in text


@pytest.mark.parametrize("url, needle", [
    ("/api/traces?service=glidein&start=100000000000000000000000", "'start' is out of range"),
    ("/api/traces?service=glidein&minDuration=100000000000000000000000h", "'minDuration' is out of range"),
    ("/ui/api/search?lookback=" + "9" * 400 + "h", "'lookback' is out of range"),
    ("/ui/api/accounting?since=100000000000000000000000", "time out of range"),
    ("/ui/api/now?window=inf", "window must be a number"),
])
def test_the_400_says_which_parameter(client, url, needle):
    resp = client.get(url)
    assert resp.status_code == 400 and needle in resp.get_data(as_text=True)


def test_glideins_cli_refuses_a_time_out_of_range(tmp_path, capsys):
    from gwtrace.cli import main

    with pytest.raises(SystemExit) as exited:   # argparse: its usage line, then the reason
        main(["glideins", "--store", str(tmp_path / "x.db"), "--since", "100000000000000000000000"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "time out of range" in err and "Traceback" not in err and "internal error" not in err


@pytest.mark.parametrize("command", [["job", "1.0"], ["now"], ["glideins"], ["account"], ["analyze"]])
def test_a_store_that_is_not_a_database_is_one_line(tmp_path, command):
    """--store given another file (random bytes, text): one line naming it and what to give, never
    "internal error: DatabaseError"."""
    for name, content in (("random.bin", bytes(range(256)) * 20), ("notes.txt", b"hello\n")):
        path = tmp_path / name
        path.write_bytes(content)
        out = subprocess.run([GWTRACE, *command, "--store", str(path)], capture_output=True, text=True, timeout=60,
                             env=clean_env(GWTRACE_HOME=str(tmp_path / "home")))
        assert out.returncode != 0 and out.stderr.count("\n") == 1, out.stderr
        assert f"{path} is not a gwtrace store (file is not a database): give the traces.db" in out.stderr
        assert "internal error" not in out.stderr and path.read_bytes() == content


@pytest.mark.parametrize("command", [["job", "1.0"], ["now"], ["glideins"], ["account"], ["analyze"]])
def test_no_store_yet_says_how_to_make_one(tmp_path, command):
    out = subprocess.run([GWTRACE, *command], capture_output=True, text=True, timeout=60,
                         env=clean_env(GWTRACE_HOME=str(tmp_path / "home")))
    assert out.returncode != 0 and out.stderr.count("\n") == 1, out.stderr
    assert "yet: `gwtrace ingest` or `gwtrace serve` makes it (run one first)" in out.stderr
    assert not (tmp_path / "home").exists()
