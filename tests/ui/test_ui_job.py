"""The job page in headless Chromium: reached from the search page's job box and from the glidein page,
it shows submit -> queue -> hold -> glidein validated -> run -> job steps -> exit, and why a held job waits."""

from __future__ import annotations

import io
import time
import urllib.parse

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource

import journey_gen as gen
from gwtrace.export.otlp import to_readable_spans
from gwtrace.journey.ingest import ingest_condor
from gwtrace.journey.spans import run_span_id
from gwtrace.sidecar.assembler import SpanRecord
from gwtrace.store import TraceStore
from test_journey_why import FACTORY_SCHEDD, PARENT, TRACE, ad_text, glidein
from test_ui_browser import css, driver, open_page, severe_console_messages, start_server, stop_server, wait  # noqa: F401

T0 = int(time.time()) - 7200
GLOBAL = f"submit.example.org#77.0#{T0}"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("job")
    db = tmp / "traces.db"
    log = tmp / "user.log"
    log.write_text(gen.full_journey(77, 0, T0) + gen.submitted(60, 0, T0) + gen.executing(60, 0, T0 + 10)
                   + gen.held(60, 0, T0 + 20, "Job has gone over memory limit of 2048 megabytes.", 34, 102))
    ads = tmp / "job.ad"
    ads.write_text(ad_text(77, 0, TraceParent=f'"00-{TRACE}-{PARENT}-01"', GlobalJobId=f'"{GLOBAL}"',
                           MATCH_EXP_JOB_GLIDEIN_Site='"SiteA"', MATCH_EXP_JOB_GLIDEIN_Factory='"OSG"',
                           MATCH_EXP_JOB_GLIDEIN_Schedd=f'"{FACTORY_SCHEDD}"', MATCH_EXP_JOB_GLIDEIN_ClusterId='"4242"',
                           MATCH_EXP_JOB_GLIDEIN_ProcId='"0"'))
    with TraceStore(db) as store:
        store.put_glidein_records([glidein(4242, "SiteA", started=T0 + 550, condor_start=T0 + 590, ended=T0 + 900)])
    err = io.StringIO()
    assert ingest_condor([str(log)], [str(ads)], "submit.example.org", str(db), err) == 0, err.getvalue()
    # the glidein's own spans, with the job wrapper's span under the job's second run
    wrapper = SpanRecord(trace_id=TRACE, span_id="aaaaaaaaaaaaaaa1", parent_id=run_span_id(TRACE, 77, 0, 2),
                         parent_remote=True, flags=1, tracestate="", name="user_job", start_us=(T0 + 610) * 10**6,
                         pid=1, end_us=(T0 + 690) * 10**6,
                         attributes={"htcondor.job.id": "77.0", "htcondor.job.global_id": GLOBAL})
    with TraceStore(db) as store:
        store.ingest(encode_spans(to_readable_spans([wrapper], Resource({"service.name": "glidein",
                                                                          "glidein.uuid": "g-job",
                                                                          "glidein.site": "SiteA"}))))
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
