"""The job page in headless Chromium: reached from the search page's job box and from the glidein page,
it shows submit -> queue -> hold -> glidein validated -> run -> job steps -> exit, and why a held job waits."""

from __future__ import annotations

import io
import re
import time
import urllib.parse

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource

import journey_gen as gen
import metrics_gen as mgen
from gwtrace.export.otlp import to_readable_spans
from gwtrace.journey.ingest import ingest_condor
from gwtrace.journey.spans import run_span_id
from gwtrace.wire.span import SpanRecord
from gwtrace.store import TraceStore
from test_journey_why import FACTORY_SCHEDD, PARENT, TRACE, ad_text, glidein
from test_ui_browser import css, driver, open_page, severe_console_messages, start_server, stop_server, wait  # noqa: F401

T0 = int(time.time()) - 7200
GLOBAL = f"submit.example.org#77.0#{T0}"
JOBSUB = "<131.225.240.11:9618?addrs=131.225.240.11-9618&alias=jobsub03.fnal.gov&noUDP&sock=schedd_2891_4f5a>"
MEMORY_HOLD = ("Error from slot1_3@glidein_4242_1@wn1.example.org: Job has gone over cgroup memory limit of 2048 "
               "megabytes. Last measured usage: 2100 megabytes.  Consider resubmitting with a higher request_memory.")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("job")
    db = tmp / "traces.db"
    log = tmp / "user.log"
    log.write_text(gen.full_journey(77, 0, T0) + gen.submitted(60, 0, T0) + gen.executing(60, 0, T0 + 10)
                   + gen.held(60, 0, T0 + 20, MEMORY_HOLD, 34, 102))
    idle = tmp / "jobsub.log"          # an idle job of a jobsub schedd, asking for more memory than offered
    idle.write_text(gen.submitted(58123404, 0, T0, host=JOBSUB))
    ads = tmp / "job.ad"
    ads.write_text(ad_text(77, 0, TraceParent=f'"00-{TRACE}-{PARENT}-01"', GlobalJobId=f'"{GLOBAL}"',
                           MATCH_EXP_JOB_GLIDEIN_Site='"SiteA"', MATCH_EXP_JOB_GLIDEIN_Factory='"OSG"',
                           MATCH_EXP_JOB_GLIDEIN_Schedd=f'"{FACTORY_SCHEDD}"', MATCH_EXP_JOB_GLIDEIN_ClusterId='"4242"',
                           MATCH_EXP_JOB_GLIDEIN_ProcId='"0"'))
    big = tmp / "big.ad"
    big.write_text(ad_text(58123404, 0, GlobalJobId=f'"jobsub03.fnal.gov#58123404.0#{T0}"', RequestCpus=8,
                           RequestMemory=64000, LastRejMatchReason='"no match found"', LastRejMatchTime=T0 + 60))
    offering = glidein(4243, "SiteA", started=T0 + 30, condor_start=T0 + 90, memory=16000)
    with TraceStore(db) as store:
        store.put_glidein_records([glidein(4242, "SiteA", started=T0 + 550, condor_start=T0 + 590, ended=T0 + 900),
                                   offering])
    err = io.StringIO()
    assert ingest_condor([str(log)], [str(ads)], "submit.example.org", str(db), err) == 0, err.getvalue()
    assert ingest_condor([str(idle)], [str(big)], None, str(db), err) == 0, err.getvalue()
    # the glidein's own spans, with the job wrapper's span under the job's second run
    wrapper = SpanRecord(trace_id=TRACE, span_id="aaaaaaaaaaaaaaa1", parent_id=run_span_id(TRACE, 77, 0, 2),
                         parent_remote=True, flags=1, tracestate="", name="user_job", start_us=(T0 + 610) * 10**6,
                         pid=1, end_us=(T0 + 690) * 10**6,
                         attributes={"htcondor.job.id": "77.0", "htcondor.job.global_id": GLOBAL})
    with TraceStore(db) as store:
        store.ingest(encode_spans(to_readable_spans([wrapper], Resource({"service.name": "glidein",
                                                                          "glidein.uuid": "g-job",
                                                                          "glidein.site": "SiteA"}))))
        # what the job wrapper's job used, sampled from its start to its end (store.metrics)
        times = list(range(0, 81, 10))
        store.put_metrics(mgen.request([mgen.subject(
            mgen.resource(job_id="77.0", trace_id=TRACE, glidein="g-job", request_memory_mb=2000),
            rss=mgen.series_of(times, [int((500 + 20 * t) * mgen.MB) for t in times], t0=(T0 + 610) * 10**9),
            cpu_user=mgen.series_of(times, [0.9 * t for t in times], t0=(T0 + 610) * 10**9))]))
    proc, url = start_server(db)
    yield url
    stop_server(proc)


def _steps(d):
    return [row.get_attribute("data-name") for row in css(d, "#journey tr.jr-span")]


def test_job_page_from_search_shows_the_whole_journey(served, driver, tmp_path):  # noqa: F811
    d = driver
    open_page(d, served + "/")
    css(d, "#f-job")[0].send_keys("77.0")
    d.execute_script("document.body.dataset.ready = '0'")
    css(d, "#job-find button")[0].click()
    wait(d, lambda d: d.execute_script("return document.body.dataset.ready") == "1" and "/job/" in d.current_url)
    assert css(d, "#job-title")[0].text == "Job 77.0 @ submit.example.org"
    assert css(d, "#job-state")[0].text.startswith("completed since") and "exit code 3" in css(d, "#job-state")[0].text
    assert _steps(d) == ["htcondor.job", "idle", "held", "idle", "executing", "transfer input", "disconnected",
                         "idle", "executing", "user_job", "transfer output"]
    held = css(d, "#journey tr.jr-span[data-name=held]")[0]
    assert "hold.label=JobOutOfResources" in held.text and held.get_attribute("data-status") == "error"
    validated = css(d, "#journey tr[data-step=validated]")
    assert len(validated) == 1 and "at SiteA (E_SiteA)" in validated[0].text
    # the validated glidein comes right before the run it served
    rows = [r.get_attribute("data-name") or r.get_attribute("data-step") for r in css(d, "#journey tbody tr")]
    assert rows[rows.index("validated") + 1] == "executing"
    assert css(d, "#why")[0].is_displayed() is False
    assert css(d, "#job-trace")[0].get_attribute("href").endswith("/trace/" + TRACE)
    d.save_screenshot(str(tmp_path / "job.png"))
    assert severe_console_messages(d) == []


def test_held_job_page_says_why(served, driver):  # noqa: F811
    d = driver
    open_page(d, served + "/job/60.0@submit.example.org")
    reasons = css(d, "#why-reasons li.why-reason")
    assert css(d, "#why")[0].is_displayed()
    assert reasons[0].find_elements("css selector", ".why-title")[0].text == \
        "held: the job used more memory than it had been given"
    assert "request_memory" in reasons[0].find_elements("css selector", ".why-advice")[0].text
    assert "hold code 34 subcode 102" in reasons[0].text
    assert "2100 MB" in reasons[0].find_elements("css selector", ".why-advice")[0].text
    assert css(d, "#job-hold-reason")[0].text == " ".join(MEMORY_HOLD.split())   # HTCondor's own words
    held = css(d, "#journey tr.jr-span[data-name=held]")[0]
    assert held.find_elements("css selector", ".jr-duration")[0].text.endswith(" so far")
    assert "Last measured usage: 2100 megabytes" in held.text
    assert severe_console_messages(d) == []


def test_idle_job_found_by_its_schedd_alias_says_which_request_no_glidein_offered(served, driver, tmp_path):  # noqa: F811
    d = driver
    open_page(d, served + "/job/58123404.0@jobsub03.fnal.gov")
    assert css(d, "#job-title")[0].text == "Job 58123404.0 @ 131.225.240.11:9618"
    assert css(d, "#job-aliases")[0].text == "jobsub03.fnal.gov"
    idle = css(d, "#journey tr.jr-span[data-name=idle]")[0]
    assert re.fullmatch(r"\dh\d\dm so far", idle.find_elements("css selector", ".jr-duration")[0].text)
    top = css(d, "#why-reasons li.why-reason")[0]
    assert top.find_elements("css selector", ".why-title")[0].text == \
        "no glidein at SiteA, SiteB offered 64000 MB of memory in the last day"
    assert "request_memory = 16000" in top.find_elements("css selector", ".why-advice")[0].text
    negotiator = [r.text for r in css(d, "#why-reasons li.why-reason") if "negotiator" in r.text][0]
    assert "LastRejMatchReason: no match found" in negotiator and " UTC (" in negotiator
    assert not re.search(r"\b1[0-9]{9}\b", css(d, "#why")[0].text)           # no raw epoch
    d.save_screenshot(str(tmp_path / "idle-job.png"))
    assert severe_console_messages(d) == []


def test_glidein_page_links_to_the_job(served, driver):  # noqa: F811
    d = driver
    open_page(d, served + "/glidein/g-job")
    (link,) = css(d, "#glidein-jobs a.job-link")
    assert link.text == GLOBAL
    d.execute_script("document.body.dataset.ready = '0'")
    link.click()
    wait(d, lambda d: d.execute_script("return document.body.dataset.ready") == "1" and "/job/" in d.current_url)
    assert urllib.parse.unquote(d.current_url).endswith("/job/" + GLOBAL)
    assert css(d, "#job-title")[0].text == "Job 77.0 @ submit.example.org"


def test_unknown_job_is_one_clear_message(served, driver):  # noqa: F811
    d = driver
    open_page(d, served + "/job/99.0")
    message = css(d, "#message")[0]
    assert message.is_displayed() and message.text.startswith("no job 99.0 in the store")


def test_job_page_shows_what_the_job_used_under_its_journey_on_the_same_time_line(served, driver):  # noqa: F811
    d = driver
    d.get_log("browser")                  # drained: what earlier pages logged is theirs
    open_page(d, served + "/job/77.0@submit.example.org")
    rows = css(d, "#journey-resources tr.res-row")
    assert [r.get_attribute("data-chart") for r in rows] == ["cores", "memory"]
    assert "peak 2,100 MB of 2,000 MB requested" in rows[1].text
    bar = css(d, "#journey tr.jr-span[data-name=user_job] .jr-bar")[0]
    left, width = d.execute_script("const r = arguments[0].getBoundingClientRect(); return [r.left, r.width];", bar)
    first, last = d.execute_script("""
        const line = arguments[0], svg = line.ownerSVGElement, r = svg.getBoundingClientRect();
        const pts = line.points, w = svg.viewBox.baseVal.width;
        return [r.left + pts.getItem(0).x / w * r.width, r.left + pts.getItem(pts.numberOfItems - 1).x / w * r.width];
    """, rows[1].find_elements("css selector", "polyline[data-series=rss]")[0])
    assert first == pytest.approx(left, abs=1) and last == pytest.approx(left + width, abs=1.5)
    assert severe_console_messages(d) == []
