"""The glideins page in headless Chromium: pages, sorting and filters done by the server; and the search page
drawing an OK glidein whose user jobs failed apart from a failed glidein (issue 29)."""

from __future__ import annotations

import io
import json
import time
import urllib.request

import pytest

from conftest import demo_factory
from gwtrace.factory.backfill import backfill
from gwtrace.store import TraceStore
from test_ui_browser import css, driver, open_page, severe_console_messages, start_server, stop_server, wait  # noqa: F401

demo = demo_factory()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("glpages")
    glideins, _ = demo.generate(260, 11, demo.PLANTS, 2.0, int(time.time()))     # ending now: /now has them
    demo.write_factory(root / "factory", glideins)
    db = root / "traces.db"
    with TraceStore(db) as store:
        backfill([str(root / "factory")], store.ingest, io.StringIO(), store.put_glidein_records, store)
    proc, url = start_server(db)
    yield url
    stop_server(proc)


def _json(url):
    with urllib.request.urlopen(url, timeout=30) as resp:
        return json.load(resp)


def _rows(driver):
    return [r.get_attribute("data-trace") for r in css(driver, "#gl-table tbody tr")]


def _reload(driver, action):
    driver.execute_script("document.body.dataset.ready = '0'")
    action()
    wait(driver, lambda d: d.execute_script("return document.body.dataset.ready") == "1")


def test_the_glideins_page_pages_sorts_and_filters(server, driver, tmp_path):  # noqa: F811
    total = _json(f"{server}/ui/api/glidein-records")["total"]
    open_page(driver, f"{server}/glideins?per_page=50")
    assert css(driver, "#gl-title")[0].text == f"{total} glideins"
    first = _rows(driver)
    assert len(first) == 50 and "page 1 of" in css(driver, "#gl-page")[0].text
    assert css(driver, "#gl-prev")[0].get_attribute("disabled") is not None
    _reload(driver, lambda: css(driver, "#gl-next")[0].click())
    second = _rows(driver)
    assert "page=2" in driver.current_url and len(second) == 50 and not set(first) & set(second)
    expected = _json(f"{server}/ui/api/glidein-records?per_page=50&page=2")["glideins"]
    assert second == [g["trace_id"] for g in expected]

    # a click on a column header sorts by it, on the server; a second click reverses
    _reload(driver, lambda: css(driver, "#gl-table th[data-sort=entry]")[0].click())
    entries = [r.find_elements("css selector", "td")[2].text for r in css(driver, "#gl-table tbody tr")]
    assert entries == sorted(entries) and "sort=entry" in driver.current_url
    _reload(driver, lambda: css(driver, "#gl-table th[data-sort=entry]")[0].click())
    entries = [r.find_elements("css selector", "td")[2].text for r in css(driver, "#gl-table tbody tr")]
    assert entries == sorted(entries, reverse=True) and "order=desc" in driver.current_url

    # the filter form: failed glideins of one entry
    from selenium.webdriver.support.ui import Select

    entry = entries[0]
    css(driver, "#gl-entry")[0].send_keys(entry)
    Select(css(driver, "#gl-status")[0]).select_by_value("ERROR")
    _reload(driver, lambda: css(driver, "#gl-form button")[0].click())
    want = _json(f"{server}/ui/api/glidein-records?entry={entry}&status=ERROR&per_page=1000")
    assert css(driver, "#gl-title")[0].text == f"{want['total']} glideins"
    cells = [[td.text for td in r.find_elements("css selector", "td")] for r in css(driver, "#gl-table tbody tr")]
    assert len(cells) == min(50, want["total"]) and all(c[2] == entry and c[6].startswith("ERROR") for c in cells)
    driver.save_screenshot(str(tmp_path / "glideins.png"))
    assert severe_console_messages(driver) == []


def test_search_draws_a_failed_glidein_red_and_an_ok_one_with_failed_jobs_apart(server, driver, tmp_path):  # noqa: F811
    open_page(driver, f"{server}/?limit=300")
    rows = css(driver, "#results tbody tr")
    drawn = {r.get_attribute("data-trace"): (r.get_attribute("class"), r.get_attribute("data-glidein-status"))
             for r in rows}
    jobs_only = [t for t, (cls, own) in drawn.items() if own == "ok" and "status-row-jobs-failed" in cls]
    failed = [t for t, (cls, own) in drawn.items() if own == "error"]
    assert jobs_only and failed
    assert all("status-row-error" in drawn[t][0] for t in failed)
    assert not any("status-row-error" in cls for cls, own in drawn.values() if own == "ok")
    row = next(r for r in rows if r.get_attribute("data-trace") == jobs_only[0])
    assert "glidein OK; its user jobs had" in row.text
    driver.save_screenshot(str(tmp_path / "search.png"))


def test_now_shows_the_backfilled_factory_per_entry_and_its_sites_lights(server, driver, tmp_path):  # noqa: F811
    """Nothing traced live: /now still shows the factory's entries (Condor-G logs) with their last 24 hours,
    and the sites' lights from the backfilled records: the site planted failing is not green."""
    data = _json(f"{server}/ui/api/now")
    history = _json(f"{server}/ui/api/factory-states")
    open_page(driver, f"{server}/now")
    rows = css(driver, "#now-factory tbody tr")
    assert [r.get_attribute("data-entry") for r in rows] == [e["entry"] for e in data["factory"]["entries"]]
    assert len(rows) > 3 and len(history["entries"]) > 3
    # an entry with a glidein open in the last 24 hours has its chart; one without, none
    assert all(bool(r.find_elements("css selector", ".spark .spark-running")) ==
               (r.get_attribute("data-entry") in history["entries"]) for r in rows)
    charted = next(r for r in rows if r.find_elements("css selector", ".spark"))
    counts = history["entries"][charted.get_attribute("data-entry")]
    title = charted.find_element("css selector", ".spark").get_attribute("title")
    assert title.startswith("running: " + " ".join(str(p["running"]) for p in counts))
    assert any(p["running"] for points in history["entries"].values() for p in points)
    lights = {li.get_attribute("data-site"): li.get_attribute("data-light") for li in css(driver, "#now-lights li")}
    assert lights == {s["site"]: s["light"] for s in data["health"]["sites"]}
    assert lights["MIT"] != "green"
    driver.save_screenshot(str(tmp_path / "now.png"))
    assert severe_console_messages(driver) == []
