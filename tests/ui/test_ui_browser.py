"""The web UI in headless Chromium: search, open a trace, click spans, glidein time line, token form.

Escaping is checked with hostile span data (<script> and <img onerror>
payloads in a span name, attribute, event name and event attribute): the page
must show them as text and never run them.  Screenshots go to the test's
temporary directory.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

import synthetic
from gwtrace.store import TraceStore

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER),
    reason="headless Chromium is not installed (Debian packages: chromium chromium-driver)",
)

HOSTILE_NAME = "<script>window.__gwtraceXss = 1</script>"
HOSTILE_ATTR = '<img src=x onerror="window.__gwtraceXss = 2">'
HOSTILE_EVENT = '<img src=y onerror="window.__gwtraceXss = 3">'
SERVE = "import sys; from gwtrace.cli.serve import main; sys.exit(main(sys.argv[1:]))"
NOW = time.time_ns()
HOUR = 3600 * 10**9


def start_server(db, env=None):
    proc = subprocess.Popen([sys.executable, "-c", SERVE, "--port", "0", "--db", str(db)],
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})
    line = proc.stderr.readline()
    m = re.search(r"listening on (http://\S+) ", line)
    if not m:
        proc.kill()
        raise AssertionError(f"server did not start: {line}{proc.stderr.read()}")
    return proc, m.group(1)


def stop_server(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.fixture(scope="module")
def data_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("ui") / "traces.db"
    rng = random.Random(42)
    with TraceStore(db) as store:
        store.ingest(synthetic.glidein_trace(rng, NOW - 3 * HOUR, uuid="g-ok", site="UCSD", n_jobs=3))
        store.ingest(synthetic.glidein_trace(rng, NOW - 2 * HOUR, uuid="g-bad", site="CERN", fail=True))
        store.ingest(synthetic.glidein_trace(rng, NOW - 1 * HOUR, uuid="g-hostile", site="FNAL", hostile=True))
    return db


@pytest.fixture(scope="module")
def server(data_db):
    proc, url = start_server(data_db)
    yield url
    stop_server(proc)


@pytest.fixture(scope="module")
def driver():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--window-size=1500,1000"):
        options.add_argument(arg)
    profile = tempfile.mkdtemp(prefix="gwtrace-chromium-")
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    d.set_page_load_timeout(30)
    yield d
    d.quit()
    shutil.rmtree(profile, ignore_errors=True)


def wait(d, condition, timeout=15):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(d, timeout).until(condition)


def open_page(d, url):
    d.get(url)
    wait(d, lambda d: d.execute_script("return document.body.dataset.ready") == "1")


def css(d, selector):
    from selenium.webdriver.common.by import By

    return d.find_elements(By.CSS_SELECTOR, selector)


def severe_console_messages(d):
    return [e["message"] for e in d.get_log("browser") if e["level"] == "SEVERE"]


def xss_fired(d):
    return d.execute_script("return window.__gwtraceXss === undefined ? null : window.__gwtraceXss")


def test_search_open_trace_click_span(server, driver, tmp_path):
    d = driver
    open_page(d, server + "/")
    rows = css(d, "#results tbody tr")
    assert len(rows) == 3
    assert [o.text for o in css(d, "#f-site option")] == ["any", "CERN", "FNAL", "UCSD"]
    assert [r.text for r in css(d, "#results .trace-link")] == ["glidein_startup.sh"] * 3
    assert len(css(d, "#glideins tbody tr")) == 3

    # Search for failed traces through the form.
    from selenium.webdriver.support.ui import Select

    Select(css(d, "#f-status")[0]).select_by_value("error")
    d.execute_script("document.body.dataset.ready = '0'")
    css(d, "#search button")[0].click()
    wait(d, lambda d: d.execute_script("return document.body.dataset.ready") == "1")
    wait(d, lambda d: "status=error" in d.current_url)
    glideins = [a.text for a in css(d, "#results .glidein-link")]
    assert glideins == ["glidein g-hostile", "glidein g-bad"]
    d.save_screenshot(str(tmp_path / "search.png"))

    # Open the hostile glidein's trace from the results.
    link = css(d, "#results tbody tr")[0].find_element("css selector", ".trace-link")
    trace_url = link.get_attribute("href")
    link.click()
    wait(d, lambda d: d.current_url == trace_url)
    wait(d, lambda d: d.execute_script("return document.body.dataset.ready") == "1")
    rows = css(d, ".wf-row")
    names = [r.find_element("css selector", ".span-name").text for r in rows]
    assert names[0] == "glidein_startup.sh"
    assert HOSTILE_NAME in names  # shown as text
    assert len(rows) == int(d.execute_script(
        "return document.querySelector('#trace-meta dd:nth-of-type(4)').textContent"))

    # Nesting and scale: a job sits two levels under condor_startup.sh, the root spans the whole axis.
    def indent(name):
        row = rows[names.index(name)]
        return float(row.find_element("css selector", ".wf-label").value_of_css_property("padding-left")[:-2])
    assert indent("glidein_startup.sh") < indent("condor_startup.sh") < indent("condor_master") < indent(
        "condor_job_wrapper.sh")
    root_bar = rows[0].find_element("css selector", ".bar")
    track = rows[0].find_element("css selector", ".wf-track")
    assert root_bar.size["width"] / track.size["width"] > 0.97
    assert "status-ok" in root_bar.get_attribute("class")

    # Click the hostile span: its payloads appear literally and nothing runs.
    rows[names.index(HOSTILE_NAME)].click()
    detail = css(d, "#detail")[0]
    wait(d, lambda d: css(d, "#detail .detail-title") and css(d, "#detail .detail-title")[0].text == HOSTILE_NAME)
    assert detail.get_attribute("data-status") == "error"
    attrs = {r.find_element("css selector", "th").text: r.find_element("css selector", "td").text
             for r in css(d, "#detail table.span-attributes tr")}
    assert attrs["payload"] == HOSTILE_ATTR
    assert css(d, "#detail .event-name")[0].text == HOSTILE_EVENT
    assert "</td><script>window.__gwtraceXss = 4</script>" in detail.text
    assert xss_fired(d) is None
    assert css(d, "img") == [] and css(d, "main script") == []
    d.save_screenshot(str(tmp_path / "trace-hostile.png"))

    # Click an ordinary span and check its values.
    rows[names.index("check_proxy.sh")].click()
    wait(d, lambda d: css(d, "#detail .detail-title")[0].text == "check_proxy.sh")
    attrs = {r.find_element("css selector", "th").text: r.find_element("css selector", "td").text
             for r in css(d, "#detail table.span-attributes tr")}
    assert attrs["process.executable.name"] == "check_proxy.sh"
    assert attrs["process.exit_code"] == "0"
    assert attrs["gwms.script.id"] == "main"
    assert "selected" in rows[names.index("check_proxy.sh")].get_attribute("class")
    shot = tmp_path / "trace.png"
    d.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    assert severe_console_messages(d) == []


def test_collapse_subtree(server, driver):
    d = driver
    open_page(d, server + "/")
    css(d, "#results .trace-link")[0].click()
    wait(d, lambda d: "/trace/" in d.current_url and d.execute_script("return document.body.dataset.ready") == "1")
    visible = lambda: len([r for r in css(d, ".wf-row") if r.is_displayed()])  # noqa: E731
    before = visible()
    condor = [r for r in css(d, ".wf-row") if r.find_element("css selector", ".span-name").text == "condor_startup.sh"]
    condor[0].find_element("css selector", ".toggle").click()
    assert visible() < before
    condor[0].find_element("css selector", ".toggle").click()
    assert visible() == before


def test_glidein_time_line(server, driver, tmp_path):
    d = driver
    open_page(d, server + "/glidein/g-ok")
    assert css(d, "#glidein-title")[0].text == "Glidein g-ok"
    lanes = [lane.get_attribute("data-phase") for lane in css(d, ".tl-lane[data-phase]")]
    assert lanes == ["glidein", "validation", "condor", "job"]
    jobs = css(d, '.tl-lane[data-phase="job"] .tl-bar')
    assert len(jobs) == 3
    # Jobs run one after another: bars ordered left to right on one row.
    lefts = [b.location["x"] for b in jobs]
    assert lefts == sorted(lefts)
    jobs[1].click()
    wait(d, lambda d: css(d, "#detail .detail-title")[0].text == "condor_job_wrapper.sh")
    attrs = {r.find_element("css selector", "th").text: r.find_element("css selector", "td").text
             for r in css(d, "#detail table.span-attributes tr")}
    assert attrs["condor.job.owner"] == "fermilab"
    assert re.fullmatch(r"\d+\.1", attrs["condor.job.id"])
    d.save_screenshot(str(tmp_path / "glidein.png"))
    assert severe_console_messages(d) == []


def test_missing_trace_shows_a_message(server, driver):
    open_page(driver, server + "/trace/" + "ab" * 16)
    message = css(driver, "#message")[0]
    assert message.is_displayed() and "No trace" in message.text


def test_token_form(data_db, driver, tmp_path):
    d = driver
    proc, url = start_server(data_db, env={"GWTRACE_SERVER_TOKEN": "ui-token-1"})
    try:
        open_page(d, url + "/")
        form = css(d, "#auth")[0]
        wait(d, lambda d: form.is_displayed())
        assert css(d, "#results tbody tr") == []
        css(d, "#auth-token")[0].send_keys("ui-token-1")
        css(d, "#auth-form button")[0].click()
        wait(d, lambda d: len(css(d, "#results tbody tr")) == 3)
        assert not css(d, "#auth")[0].is_displayed()
        d.save_screenshot(str(tmp_path / "token.png"))
    finally:
        d.execute_script("sessionStorage.clear()")
        stop_server(proc)
