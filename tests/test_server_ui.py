"""Web UI routes without a browser: pages, their JSON endpoints, phases, air-gap and escaping rules.

The browser itself is exercised in tests/ui/.
"""

from __future__ import annotations

import pathlib
import random
import re
import time

import pytest

import gwtrace.server
import synthetic
from gwtrace.server import create_app
from gwtrace.server.ui import PHASES, phase_of
from gwtrace.store import TraceStore
from test_store import TRACE_A, make_request

SERVER_DIR = pathlib.Path(gwtrace.server.__file__).parent
NOW = time.time_ns()


@pytest.fixture
def store(tmp_path):
    s = TraceStore(tmp_path / "traces.db")
    rng = random.Random(7)
    s.ingest(synthetic.glidein_trace(rng, NOW - 3600 * 10**9, uuid="g-ok", site="UCSD", n_jobs=2))
    s.ingest(synthetic.glidein_trace(rng, NOW - 7200 * 10**9, uuid="g-bad", site="CERN", fail=True))
    s.ingest(make_request([dict(trace=TRACE_A, span=1, name="old", dur=10**9)],
                          resource={"service.name": "other", "glidein.site": "UCSD"}))
    yield s
    s.close()


@pytest.fixture
def client(store):
    return create_app(store).test_client()


def test_pages_are_html_shells_with_a_strict_csp(client):
    for path in ("/", "/trace/" + TRACE_A.hex(), "/glidein/g-ok"):
        resp = client.get(path)
        assert resp.status_code == 200 and resp.mimetype == "text/html"
        csp = resp.headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "default-src 'self'" in csp
        assert resp.headers["X-Content-Type-Options"] == "nosniff"
        assert b"gwtrace" in resp.data
    # No trace data in the shell: it is fetched (with the token, if any) by the page.
    assert b"old" not in client.get("/trace/" + TRACE_A.hex()).data


def test_static_assets_are_served(client):
    for name in ("common.js", "search.js", "trace.js", "glidein.js", "analysis.js", "hints.js", "outliers.js",
                 "gwtrace.css"):
        resp = client.get("/static/" + name)
        assert resp.status_code == 200 and len(resp.data) > 500


def test_ui_loads_nothing_from_elsewhere():
    """Air-gapped: no URL with a host, no CDN, no @import or web font in the shipped UI."""
    external = re.compile(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}|@import|url\(\s*['\"]?(https?:|//)", re.I)
    files = list((SERVER_DIR / "templates").glob("*.html")) + list((SERVER_DIR / "static").glob("*"))
    assert len(files) >= 8
    for f in files:
        assert not external.search(f.read_text()), f"{f.name} references an external resource"


def test_ui_code_never_parses_data_as_html():
    """The escaping rule, checked on the source: DOM built with textContent/createElement only."""
    sinks = re.compile(r"\.innerHTML|\.outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function")
    for f in (SERVER_DIR / "static").glob("*.js"):
        assert not sinks.search(f.read_text()), f"{f.name} uses an HTML sink"


def test_filters(client):
    doc = client.get("/ui/api/filters").get_json()
    assert doc == {"services": ["glidein", "other"], "sites": ["CERN", "UCSD"],
                   "entries": ["OSG_CERN_ce1", "OSG_UCSD_ce1"]}


def search(client, query=""):
    resp = client.get("/ui/api/search" + query)
    assert resp.status_code == 200, resp.data
    return resp.get_json()["traces"]


def test_search_summaries(client):
    traces = search(client)
    assert [t["rootName"] for t in traces] == ["glidein_startup.sh", "glidein_startup.sh", "old"]
    ok, bad = traces[0], traces[1]
    assert (ok["glidein"], ok["site"], ok["entry"], ok["status"]) == ("g-ok", "UCSD", "OSG_UCSD_ce1", "ok")
    assert (bad["glidein"], bad["status"], bad["errorCount"]) == ("g-bad", "error", 2)
    assert ok["spanCount"] == 1 + len(synthetic.VALIDATION_SCRIPTS) + 2 + 2
    assert ok["startTime"] == (NOW - 3600 * 10**9) // 1000 and ok["duration"] > 0
    assert re.fullmatch(r"[0-9a-f]{32}", ok["traceID"])


def test_search_filters(client):
    assert [t["glidein"] for t in search(client, "?site=UCSD&service=glidein")] == ["g-ok"]
    assert [t["rootName"] for t in search(client, "?site=UCSD")] == ["glidein_startup.sh", "old"]
    assert [t["glidein"] for t in search(client, "?entry=OSG_CERN_ce1")] == ["g-bad"]
    assert [t["glidein"] for t in search(client, "?status=error")] == ["g-bad"]
    assert [t["rootName"] for t in search(client, "?status=unset")] == ["old"]
    assert [t["glidein"] for t in search(client, "?minDuration=10m")] == ["g-ok"]
    assert [t["glidein"] for t in search(client, "?lookback=90m")] == ["g-ok"]
    start = (NOW - 8000 * 10**9) // 1000
    end = (NOW - 5000 * 10**9) // 1000
    assert [t["glidein"] for t in search(client, f"?start={start}&end={end}")] == ["g-bad"]
    assert len(search(client, "?limit=1")) == 1
    assert client.get("/ui/api/search?status=weird").status_code == 400
    assert client.get("/ui/api/search?minDuration=10").status_code == 400


def test_glidein_list_and_page_data(client):
    glideins = client.get("/ui/api/glideins").get_json()["glideins"]
    assert [g["uuid"] for g in glideins] == ["g-ok", "g-bad"]
    assert glideins[0]["site"] == "UCSD"
    doc = client.get("/ui/api/glidein/g-ok").get_json()
    assert doc["uuid"] == "g-ok" and doc["phases"] == list(PHASES)
    by_phase = {}
    for s in doc["spans"]:
        by_phase.setdefault(s["phase"], []).append(s["operationName"])
    assert by_phase["glidein"] == ["glidein_startup.sh"]
    assert len(by_phase["validation"]) == len(synthetic.VALIDATION_SCRIPTS)
    assert set(by_phase["condor"]) == {"condor_startup.sh", "condor_master"}
    assert by_phase["job"] == ["condor_job_wrapper.sh"] * 2
    assert {t["key"]: t["value"] for t in doc["resource"]}["glidein.site"] == "UCSD"
    assert client.get("/ui/api/glidein/nobody").status_code == 404


def span(name, parent="ab", **attrs):
    return {"name": name, "parent_span_id": parent, "attributes": attrs}


@pytest.mark.parametrize("s, phase", [
    (span("anything", parent=""), "glidein"),
    (span("check_proxy.sh"), "validation"),
    (span("run", **{"process.executable.name": "setup_x509.sh"}), "validation"),
    (span("validate node"), "validation"),
    (span("condor_startup.sh"), "condor"),
    (span("condor_master"), "condor"),
    (span("HTCondor"), "condor"),
    (span("condor_platform_select.sh"), "validation"),
    (span("collector_setup.sh"), "validation"),
    (span("condor_job_wrapper.sh"), "job"),
    (span("user job 12.0"), "job"),
    (span("payload"), "job"),
    (span("transfer", **{"condor.job.id": "1.0"}), "job"),
    (span("jobsub_submit"), "other"),
    (span("mystery"), "other"),
    (span("mystery", **{"glidein.phase": "condor"}), "condor"),
    (span("check_proxy.sh", **{"gwtrace.phase": "user_job"}), "job"),
    (span("x", **{"glidein.phase": "unheard-of"}), "other"),
])
def test_phase_of(s, phase):
    assert phase_of(s) == phase


def test_trace_page_data_comes_from_the_jaeger_api(client, store):
    trace_id = store.find_traces(resource_attrs={"glidein.uuid": "g-bad"})[0]["trace_id"]
    doc = client.get(f"/api/traces/{trace_id}").get_json()
    names = [s["operationName"] for s in doc["data"][0]["spans"]]
    assert "validate_node.sh" in names and "condor_startup.sh" not in names  # the glidein stopped there
    failed = next(s for s in doc["data"][0]["spans"] if s["operationName"] == "validate_node.sh")
    assert {t["key"]: t["value"] for t in failed["tags"]}["error"] is True
    assert failed["logs"][0]["fields"][1]["value"].startswith("node validation failed")
