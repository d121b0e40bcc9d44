"""The analysis pages' routes without a browser: the JSON is `gwtrace analyze`'s, bad parameters are one-line
400s, every chart mark links to exactly the glideins behind it, and each span gets a percentile at its entry.

The browser side is tests/ui/test_ui_analysis.py.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from urllib.parse import parse_qsl, urlsplit
from xml.etree import ElementTree as ET

import pytest

from conftest import copy_store, demo_factory
from gwtrace.cli.analyze import main as analyze_main
from gwtrace.analysis.percentiles import span_percentiles
from gwtrace.analysis.plots import histogram_edges, kind_seconds
from gwtrace.analysis.stats import phase_table, trends
from gwtrace.server import create_app
from gwtrace.server.analysis import SVG_NS, XLINK_NS
from gwtrace.store import TraceStore

demo_factory()   # skips this module without HTCondor's bindings (the demo's Condor-G logs need them)


@pytest.fixture(scope="module")
def db(planted_store):
    return planted_store


@pytest.fixture(scope="module")
def store(db):
    with TraceStore(db) as s:
        yield s


@pytest.fixture(scope="module")
def client(store):
    return create_app(store).test_client()


@pytest.fixture(scope="module")
def records(store):
    return list(store.glidein_records())


def _cli(db, *args):
    out = io.StringIO()
    assert analyze_main(["--store", str(db), "--format", "json", *args], stdout=out, stderr=io.StringIO()) == 0
    return json.loads(out.getvalue())


@pytest.mark.parametrize("query, args", [
    ("", []), ("by=site", ["--by", "site"]), ("site=MIT", ["--site", "MIT"]),
    ("threshold=idle_tail=600", ["--threshold", "idle_tail=600"]),
])
def test_analysis_json_is_gwtrace_analyze_json(client, db, query, args):
    body = client.get("/ui/api/analysis?" + query).get_json()
    assert body == _cli(db, *args)
    assert body["phases"] and body["hints"]


def test_hints_and_outliers_json_are_the_cli_s(client, db):
    hints = client.get("/ui/api/hints").get_json()
    assert hints == _cli(db, "--hints")
    assert {h["kind"] for h in hints["hints"]} >= {"failing_script", "idle_tail", "ce_wait", "no_jobs"}
    found = client.get("/ui/api/outliers").get_json()
    assert found == _cli(db, "--outliers") and found["outliers"]


@pytest.mark.parametrize("path", [
    "/ui/api/analysis?by=frontend", "/ui/api/analysis?since=yesterday-ish", "/ui/api/hints?threshold=nope=1",
    "/ui/api/outliers?until=x", "/ui/api/analysis/phase_lengths.svg?by=cluster",
    "/ui/api/glidein-records?phase=nope", "/ui/api/glidein-records?min_seconds=5",
    "/ui/api/glidein-records?phase=running&max_seconds=ten", "/ui/api/glidein-records?failed=2",
    "/ui/api/glidein-records?day=monday",
])
def test_a_bad_parameter_is_a_400_with_one_line(client, path):
    resp = client.get(path)
    assert resp.status_code == 400 and resp.mimetype == "application/json"
    error = resp.get_json()["error"]
    assert error and "\n" not in error and list(resp.get_json()) == ["error"]


def test_unknown_chart_is_a_404(client):
    resp = client.get("/ui/api/analysis/pie.svg")
    assert resp.status_code == 404 and "phases_by_group" in resp.get_json()["error"]


def _links(client, name, query=""):
    resp = client.get(f"/ui/api/analysis/{name}.svg?{query}")
    assert resp.status_code == 200 and resp.mimetype == "image/svg+xml"
    assert b"style=" not in resp.data and b"<script" not in resp.data  # inline styles: the CSP refuses them
    root = ET.fromstring(resp.data)
    assert len(root.findall(f".//{{{SVG_NS}}}path")) > 50
    return [a.get(f"{{{XLINK_NS}}}href") for a in root.iter(f"{{{SVG_NS}}}a")]


def _listed(client, href):
    url = urlsplit(href)
    assert url.path == "/glideins"
    body = client.get("/ui/api/glidein-records?per_page=1000&" + url.query).get_json()   # one page holds them all
    assert not body["truncated"] and body["total"] == len(body["glideins"])
    return body["glideins"], dict(parse_qsl(url.query))


def test_each_bar_links_to_exactly_its_glideins(client, records):
    cells = {(r["entry"], r["phase"]): r["glideins"] for r in phase_table(records, "entry")}
    links = _links(client, "phases_by_group")
    assert len(links) >= 20
    for href in links:
        listed, q = _listed(client, href)
        assert len(listed) == cells[(q["entry"], q["phase"])] > 0
        assert {g["entry"] for g in listed} == {q["entry"]} and all(g["phase_seconds"] > 0 for g in listed)


def test_each_histogram_bin_links_to_exactly_its_glideins(client, records):
    links = _links(client, "phase_lengths")
    assert len(links) >= 20
    lengths = {}
    for rec in records:
        for kind, seconds in kind_seconds(rec).items():
            lengths.setdefault(kind, []).append(max(seconds, 1.0))
    for href in links:
        listed, q = _listed(client, href)
        low, high = float(q["min_seconds"]), float(q["max_seconds"])
        assert low in histogram_edges(max(lengths[q["phase"]]))
        expected = sum(low <= v < high for v in lengths[q["phase"]])
        assert len(listed) == expected > 0


def test_each_failure_point_links_to_that_day_s_failed_glideins(client, records):
    failed = {(t["site"], d["day"]): d["failed"] for t in trends(records) for d in t["days"]}
    links = _links(client, "failure_rate_by_site")
    assert links and len(links) == sum(1 for v in failed.values() if v)
    for href in links:
        listed, q = _listed(client, href)
        assert len(listed) == failed[(q["site"], int(q["day"]))] > 0
        assert {g["status"] for g in listed} == {"ERROR"} and {g["site"] for g in listed} == {q["site"]}


def test_a_failing_script_s_number_lists_exactly_its_glideins(client, records):
    from gwtrace.analysis.stats import script_table

    failing = [r for r in script_table(records) if r["failed"]]
    assert failing
    for row in failing:
        listed = client.get(f"/ui/api/glidein-records?site={row['site']}&script_failed={row['script']}").get_json()
        assert len(listed["glideins"]) == row["failed"]
        assert {g["status"] for g in listed["glideins"]} == {"ERROR"}


def test_chart_links_keep_the_page_filters(client):
    links = _links(client, "phases_by_group", "site=MIT&by=site")
    assert links and all(dict(parse_qsl(urlsplit(h).query))["site"] == "MIT" for h in links)


def test_pages_are_public_shells_and_the_data_needs_the_token(store):
    client = create_app(store, token="s3cret").test_client()
    for path in ("/analysis", "/hints", "/outliers", "/glideins", "/accounting"):
        resp = client.get(path)
        assert resp.status_code == 200 and "script-src 'self'" in resp.headers["Content-Security-Policy"]
        assert b'href="/analysis"' in resp.data and b'href="/hints"' in resp.data
    assert b"OSG_US" not in client.get("/analysis").data
    for path in ("/ui/api/analysis", "/ui/api/hints", "/ui/api/outliers", "/ui/api/analysis/phase_lengths.svg"):
        assert client.get(path).status_code == 401
    assert client.get("/ui/api/hints", headers={"Authorization": "Bearer s3cret"}).status_code == 200


def test_span_percentiles_against_the_same_phase_at_the_entry(client, store):
    top = client.get("/ui/api/outliers").get_json()["outliers"][0]
    body = client.get("/ui/api/percentiles/" + top["trace_id"]).get_json()
    assert body["entry"] == top["entry"]
    spans = {s["span_id"]: s for s in store.get_trace(top["trace_id"])}
    assert set(body["spans"]) == set(spans)
    by_phase = {p["phase"]: p for p in body["spans"].values()}
    odd = by_phase[top["phase"]]   # the outlier's phase: far up its entry's distribution
    assert odd["n"] >= 20 and odd["percentile"] >= 90 and odd["seconds"] == top["seconds"]
    assert by_phase["lifetime"]["n"] == top["n"] or by_phase["lifetime"]["n"] >= 20
    assert all(0 <= p["percentile"] <= 100 for p in body["spans"].values() if p["percentile"] is not None)


def test_too_few_to_compare_is_said_not_invented(store, records):
    rec = next(r for r in records if r.get("scripts") and r.get("jobs"))
    spans = store.get_trace(rec["trace_id"])
    group = [r for r in records if r["entry"] == rec["entry"]][:5]
    found = span_percentiles(spans, rec, group)
    assert Counter(p["phase"] for p in found.values())["job"] == len(rec["jobs"])
    few = [p for p in found.values() if p["phase"] is not None and p["n"] < 20]
    assert len(few) >= len(rec["scripts"]) and found[spans[0]["span_id"]] in few   # the root's lifetime: 5 values
    for p in few:
        assert p["percentile"] is None and "too few" in p["reason"] and str(p["n"]) in p["reason"]
    for p in found.values():   # jobs: one value per job of the five glideins, which may be 20 or more
        assert (p["percentile"] is None) == (p["phase"] is None or p["n"] < 20)


def test_a_trace_without_a_record_says_so(db, tmp_path):
    import random

    import synthetic

    store = TraceStore(copy_store(db, tmp_path / "traces.db"))   # the shared store is read only
    client = create_app(store).test_client()
    store.ingest(synthetic.glidein_trace(random.Random(1), 1790000000 * 10**9, uuid="g-live", site="UCSD"))
    trace_id = next(t["trace_id"] for t in store.find_traces(limit=1000) if t.get("glidein_uuid") == "g-live")
    body = client.get("/ui/api/percentiles/" + trace_id).get_json()
    assert body["spans"] == {} and "no glidein record" in body["reason"]
    assert client.get("/ui/api/percentiles/" + "ab" * 16).status_code == 404
    store.close()


@pytest.mark.parametrize("name, parent, attrs, phase", [
    ("glidein_startup.sh", "", {}, "lifetime"),
    ("condorg.queued", "p", {}, "queued"),
    ("ce.queue", "p", {}, "ce_queue"),
    ("main/cvmfs_setup.sh", "p", {}, "script:main/cvmfs_setup.sh"),
    ("cvmfs_setup.sh", "p", {}, "script:main/cvmfs_setup.sh"),         # a live span, named by its file
    ("whatever", "p", {"glidein.script": "main/x.sh"}, "script:main/x.sh"),
    ("main/condor_startup.sh", "p", {}, "htcondor"),
    ("condor", "p", {}, "htcondor"),
    ("job", "p", {}, "job"),
    ("wrapper", "p", {"condor.job_id": "1.0"}, "job"),
    ("curl", "p", {}, None),
])
def test_what_a_span_is_compared_with(name, parent, attrs, phase):
    from gwtrace.analysis.percentiles import span_phase

    span = {"name": name, "parent_span_id": parent, "attributes": attrs}
    assert span_phase(span, ["main/cvmfs_setup.sh", "main/condor_startup.sh"]) == phase


def test_accounting_api_is_the_cli_answer_with_both_figures_labelled(client, db, capsys):
    from gwtrace.cli.account import main as account

    got = client.get("/ui/api/accounting?by=site&bucket=1d")
    assert got.status_code == 200
    body = got.get_json()
    assert account(["--store", str(db), "--by", "site", "--format", "json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    for key in ("units", "series", "groups", "figures", "glideinwms", "demand"):
        assert body[key] == cli[key], key
    assert body["figures"]["total"]["efficiency"] <= 1 and body["glideinwms"]["groups"]["total"]["glideins"] > 0
    assert body["glideinwms"]["note"] and "3.10.12" in body["glideinwms"]["note"]   # the demo has multi-core pilots
