"""Resource hints (``gwtrace.analysis.resources``) and the chart's series, from samples kept in a store."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from gwtrace.analysis.hints import OVERUSE, PILOT, Thresholds
from gwtrace.analysis.resources import chart, cores_used, resource_hints
from gwtrace.store import TraceStore
from metrics_gen import MB, flat_job, leaking_job, request, resource, series_of, subject

TRACE = "0af7651916cd43dd8448eb211c80319c"


def _hints(tmp_path: Path, *subjects, thresholds=None):
    with TraceStore(tmp_path / "t.db") as store:
        store.put_metrics(request(subjects))
        return {h.kind: h for h in resource_hints(store, thresholds)}


def test_a_leaking_job_is_found_and_a_flat_one_is_not(tmp_path: Path) -> None:
    found = _hints(tmp_path, leaking_job(job_id="1.0", owner="alice"), flat_job(job_id="2.0", owner="bob"))
    assert set(found) == {"memory_leak"}
    leak = found["memory_leak"]
    assert leak.scope == {"owner": "alice"} and leak.count == 1
    assert leak.glideins[0]["job_id"] == "1.0" and leak.glideins[0]["samples"] == 20
    # 60 MB every 30 s is 7,200 MB/h, a perfect line
    assert leak.glideins[0]["mb_per_hour"] == pytest.approx(7200, rel=1e-6) and leak.glideins[0]["r2"] == 1.0
    assert "passes its request_memory" in leak.summary and "request_memory" in leak.action


def test_two_points_never_make_a_leak(tmp_path: Path) -> None:
    assert _hints(tmp_path, leaking_job(job_id="1.0", n=2)) == {}
    assert _hints(tmp_path, leaking_job(job_id="3.0", n=5)) == {}            # under leak_min_points (6)


def test_a_noisy_series_that_does_not_fit_a_line_is_no_leak(tmp_path: Path) -> None:
    times = [i * 30 for i in range(20)]
    sawtooth = [int((500 + (i % 4) * 400 + i * 2) * MB) for i in range(20)]
    rm = subject(resource(job_id="4.0"), rss=series_of(times, sawtooth))
    assert _hints(tmp_path, rm) == {}


def test_a_job_using_three_cores_with_one_requested_is_found_with_what_to_ask(tmp_path: Path) -> None:
    found = _hints(tmp_path, flat_job(job_id="5.0", owner="carol", cores=3.0, request_cpus=1, n=121),
                   flat_job(job_id="6.0", owner="carol", cores=1.0, request_cpus=1))
    hint = found["cores_over_request"]
    assert hint.cost_unit == OVERUSE and hint.count == 1
    assert "1 of carol's 2 sampled job(s)" in hint.summary and "request_cpus = 3" in hint.action
    assert hint.evidence["by_site"] == {"SiteA": 1}
    assert hint.glideins[0]["cores_used"] == pytest.approx(3.0) and hint.glideins[0]["cpu_efficiency"] == 3.0
    # 2 extra cores for the 1 h sampled, over the group's own period (at least an hour): 2 core-hours a day x 24
    assert hint.cost_per_day == pytest.approx(2 * 1 * 24)


def test_memory_over_request_names_the_owner_sites_worst_case_and_a_request(tmp_path: Path) -> None:
    found = _hints(tmp_path,
                   flat_job(job_id="7.0", owner="dave", mb=3000, request_memory_mb=2000),
                   flat_job(job_id="8.0", owner="dave", mb=2500, request_memory_mb=2000, site="SiteB"),
                   flat_job(job_id="9.0", owner="dave", mb=1000, request_memory_mb=2000))
    hint = found["memory_over_request"]
    assert hint.scope == {"owner": "dave"} and hint.count == 2
    assert "2 of dave's 3 sampled job(s)" in hint.summary and "3,003 MB peak for 2,000 MB" in hint.summary
    assert hint.evidence["by_site"] == {"SiteA": 1, "SiteB": 1}
    assert "request_memory = 3400" in hint.action                  # 10% over the largest peak, in 100 MB steps
    assert [g["job_id"] for g in hint.glideins] == ["7.0", "8.0"]


def test_an_oversubscribed_node_is_found_per_site_only_when_its_cores_are_known(tmp_path: Path) -> None:
    times = [i * 30 for i in range(10)]
    busy = subject(resource("glidein", glidein="g-busy"),
                   load=series_of(times, [24.0] * 10), cores=8)
    calm = subject(resource("glidein", glidein="g-calm"),
                   load=series_of(times, [6.0] * 10), cores=8)
    unknown = subject(resource("glidein", glidein="g-what", site="SiteC"), load=series_of(times, [90.0] * 10))
    found = _hints(tmp_path, busy, calm, unknown)
    hint = found["oversubscribed_node"]
    assert hint.scope == {"site": "SiteA"} and hint.cost_unit == PILOT and hint.count == 1
    assert "3.0× their cores" in hint.summary and "slot layout" in hint.action
    assert hint.glideins[0]["glidein"] == "g-busy"


def test_thresholds_are_settable(tmp_path: Path) -> None:
    loose = Thresholds.parse(["leak_min_points=2", "leak_r2=0.5"])
    assert loose.leak_min_points == 2
    assert set(_hints(tmp_path, leaking_job(job_id="1.0", n=3), thresholds=loose)) == {"memory_leak"}


def test_cores_used_is_the_slope_of_cpu_time_over_every_mode() -> None:
    user = {"points": [[0, 0.0], [10 * 10**9, 15.0], [20 * 10**9, 30.0]]}
    system = {"points": [[0, 0.0], [10 * 10**9, 5.0], [20 * 10**9, 5.0]]}
    assert cores_used([user, system]) == [[10 * 10**9, 2.0], [20 * 10**9, 1.5]]
    restarted = {"points": [[0, 50.0], [10 * 10**9, 10.0], [20 * 10**9, 20.0]]}
    assert cores_used([restarted]) == [[20 * 10**9, 1.0]]          # a counter going back is no negative load


def test_the_chart_gives_cores_memory_and_the_request(tmp_path: Path) -> None:
    with TraceStore(tmp_path / "t.db") as store:
        store.put_metrics(request([flat_job(TRACE, n=5, cores=2.0, mb=800)]))
        job, = store.metric_subjects(trace_id=TRACE)
        data = chart(job, store.metric_series(job["id"]))
    assert data["request_memory_mb"] == 2000 and len(data["rss_mb"]) == 5
    assert [round(v, 3) for _, v in data["cores"]] == [2.0] * 4
    assert data["rss_mb"][0][1] == pytest.approx(803)


def test_gwtrace_analyze_prints_the_resource_hints_from_the_store(tmp_path: Path) -> None:
    from gwtrace.cli.analyze import main

    with TraceStore(tmp_path / "t.db") as store:
        store.put_metrics(request([leaking_job(TRACE, job_id="11.0", owner="erin"),
                                   flat_job(job_id="12.0", owner="erin", cores=3.0)]))
    out, err = io.StringIO(), io.StringIO()
    assert main(["--store", str(tmp_path / "t.db"), "--hints", "--workers", "1"], out, err) == 0, err.getvalue()
    text = out.getvalue()
    assert "ranked by canonical core-hours used beyond what jobs requested per day" in text
    assert "memory grows steadily in 1 of erin's job(s)" in text and "request_cpus = 3" in text
    assert "job 11.0 (erin) at SiteA" in text
    out = io.StringIO()
    assert main(["--store", str(tmp_path / "t.db"), "--hints", "--format", "json", "--workers", "1"], out, err) == 0
    kinds = {h["kind"]: h for h in json.loads(out.getvalue())["hints"]}
    assert kinds["memory_leak"]["glideins"][0]["trace_id"] == TRACE and kinds["memory_leak"]["rank"] >= 1


def test_the_hints_page_data_and_the_resources_api_carry_the_samples(tmp_path: Path) -> None:
    from gwtrace.server import create_app

    with TraceStore(tmp_path / "t.db") as store:
        store.put_metrics(request([leaking_job(TRACE, job_id="11.0", owner="erin"),
                                   subject(resource("glidein", glidein="g-9"), load=series_of([0, 30], [1.0, 2.0]))]))
        http = create_app(store).test_client()
        hints = http.get("/ui/api/hints").get_json()["hints"]
        assert [(h["kind"], h["rank"], h["cost_unit"]) for h in hints] == [("memory_leak", 1, OVERUSE)]
        subjects = http.get(f"/ui/api/resources/{TRACE}?glidein=g-9").get_json()["subjects"]
        assert [(s["kind"], s["job_id"] or s["glidein"]) for s in subjects] == [("job", "11.0"), ("glidein", "g-9")]
        assert len(subjects[0]["rss_mb"]) == 20 and subjects[1]["load"][1][1] == 2.0
        assert subjects[0]["rss_mb"][0][0] == subjects[0]["cores"][0][0] - 30 * 10**6     # µs, as the waterfall's
        assert http.get("/ui/api/resources/nothex").status_code == 400
        assert http.get("/ui/api/resources/" + "1" * 32).get_json() == {"subjects": []}
