"""The 'now' page in headless Chromium: glideins alive per site/entry, their phase and jobs, one that stopped
reporting, and the red light of a site that got worse (issue 13)."""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from gwtrace.store import TraceStore
from test_ui_browser import css, driver, open_page, severe_console_messages, start_server, stop_server, wait  # noqa: F401

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_live_store import S, plant, request, span  # noqa: E402

HOSTILE = "<img src=x onerror=\"window.__gwtraceXss = 9\">"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    db = tmp_path_factory.mktemp("now") / "traces.db"
    now = time.time()
    with TraceStore(db) as store:
        plant(store, now)
        store.put_live_snapshot(request(
            [span("a1", "", "glidein", now - 3600), span("a2", "a1", "condor", now - 3000),
             span("a3", "a2", "user_job", now - 600, **{"condor.job_id": "77.0"})], 1, now - 5, key="g-run"),
            now_ns=int((now - 5) * S))
        store.put_live_snapshot(request(
            [span("b1", "", "glidein", now - 900), span("b2", "b1", HOSTILE + ".sh", now - 800)], 1, now - 1000,
            key="g-gone"), now_ns=int((now - 1000) * S))
    proc, url = start_server(db)
    yield url
    stop_server(proc)


def test_now_page_shows_phases_jobs_stale_glideins_and_red_lights(server, driver, tmp_path):  # noqa: F811
    with urllib.request.urlopen(server + "/ui/api/now", timeout=30) as resp:
        data = json.load(resp)
    open_page(driver, server + "/now")
    driver.save_screenshot(str(tmp_path / "now.png"))
    rows = {r.get_attribute("data-key"): r for r in css(driver, "#now-glideins tbody tr")}
    assert set(rows) == {g["key"] for g in data["glideins"]} == {"g-run", "g-gone"}
    run = [td.text for td in rows["g-run"].find_elements("css selector", "td")]
    assert run[3:5] == ["alive", "running"] and run[7].startswith("77.0 (10m")
    gone = rows["g-gone"]
    assert gone.get_attribute("data-state") == "stopped reporting"
    assert gone.find_elements("css selector", "td")[4].text == "script:" + HOSTILE + ".sh"   # shown as text
    assert driver.execute_script("return window.__gwtraceXss === undefined")
    entry = css(driver, "#now-entries tbody tr")[0]
    assert [td.text for td in entry.find_elements("css selector", "td")][:5] == ["FNAL", "fnal_ce1", "1", "1", "1"]
    red = css(driver, "#now-lights li.red")
    assert [li.get_attribute("data-site") for li in red] == ["JUMP"] == data["health"]["red"]
    assert "6/12 glideins failed" in red[0].text
    assert {li.get_attribute("data-site") for li in css(driver, "#now-lights li.green")} == {"FINE"}
    # failing 30% all along: not news (not red), but not green either (issue 29)
    assert [li.get_attribute("data-site") for li in css(driver, "#now-lights li.amber")] == ["ALWAYS_BAD"]
    assert "1 glidein(s) alive, 1 job(s) running, 1 stopped reporting" == css(driver, "#now-totals")[0].text
    nav = [a.text for a in css(driver, "header nav a")]
    assert "Now" in nav
    assert severe_console_messages(driver) == []
