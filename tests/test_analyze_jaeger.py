"""gwtrace analyze --source jaeger=URL: the same analysis from a Jaeger query API as from the store,
tested over real HTTP against gwtrace serve (which speaks that API)."""

import io
import json
import os
import re
import signal
import subprocess
import sys

import pytest

from conftest import PLANTED, demo_factory
from gwtrace.analysis import jaeger_source
from gwtrace.cli import main
from gwtrace.factory.backfill import backfill
from gwtrace.store import TraceStore

demo_factory()   # skips this module without HTCondor's bindings (the demo's Condor-G logs need them)
SERVE = "import sys; from gwtrace.cli.serve import main; sys.exit(main(sys.argv[1:]))"
END = PLANTED["end"]


@pytest.fixture(scope="module")
def served(planted_factory, tmp_path_factory):
    """A store holding only the backfilled spans of a planted demo factory, served over HTTP."""
    factory, where = planted_factory
    db = tmp_path_factory.mktemp("jaeger") / "traces.db"
    with TraceStore(db) as store:
        backfill([str(factory)], store.ingest, io.StringIO())   # spans only: records come from traces
    proc = subprocess.Popen([sys.executable, "-c", SERVE, "--port", "0", "--db", str(db)], stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ))
    line = proc.stderr.readline()
    found = re.search(r"listening on (http://\S+) ", line)
    assert found, line
    yield found.group(1), db, where
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=20)


def _json(capsys, *argv):
    assert main(list(argv)) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_the_jaeger_api_gives_the_same_analysis_as_the_store(served, capsys):
    url, db, where = served
    stored = _json(capsys, "analyze", "--store", str(db), "--format", "json")
    remote = _json(capsys, "analyze", "--source", f"jaeger={url}", "--since", str(END - 5 * 86400),
                   "--format", "json")
    assert remote["phases"] == stored["phases"]
    assert remote["scripts"] == stored["scripts"]
    assert [(h["kind"], h["scope"], h["count"]) for h in remote["hints"]] == \
        [(h["kind"], h["scope"], h["count"]) for h in stored["hints"]]
    assert {h["kind"] for h in remote["hints"]} >= {"failing_script", "idle_tail", "no_jobs"}


def test_the_fetch_is_paged_by_halving_full_windows(served, monkeypatch):
    url, db, _ = served
    calls = []
    real = jaeger_source._get

    def counting(base, params):
        calls.append(dict(params))
        return real(base, params)

    monkeypatch.setattr(jaeger_source, "_get", counting)
    traces = list(jaeger_source.fetch_traces(url, (END - 5 * 86400) * 10**6, END * 10**6, page=50))
    with TraceStore(db) as store:
        assert len(traces) == store.trace_count() == len({t["traceID"] for t in traces})
    assert len(calls) > 8 and all(c["limit"] == "50" for c in calls)


def test_an_unreachable_api_is_one_line(capsys):
    assert main(["analyze", "--source", "jaeger=http://127.0.0.1:9", "--hints"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot read the Jaeger query API at http://127.0.0.1:9" in err[0]
