"""The trace page's critical path and self-times in headless Chromium."""

from __future__ import annotations

import json
import random
import urllib.request

import pytest

import synthetic
from gwtrace.store import TraceStore
from test_ui_browser import css, driver, open_page, severe_console_messages, start_server, stop_server, wait  # noqa: F401


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    db = tmp_path_factory.mktemp("crit") / "traces.db"
    with TraceStore(db) as store:
        store.ingest(synthetic.glidein_trace(random.Random(9), 1_790_000_000 * 10**9, n_jobs=3, uuid="g-crit", extra_spans=3))
        trace_id = store.last_trace_id()
    proc, url = start_server(db)
    yield url, trace_id
    stop_server(proc)


def test_the_critical_path_is_highlighted_and_self_times_listed(served, driver, tmp_path):  # noqa: F811
    url, trace_id = served
    with urllib.request.urlopen(f"{url}/ui/api/critical/{trace_id}", timeout=30) as resp:
        data = json.load(resp)
    open_page(driver, f"{url}/trace/{trace_id}?critical=1")
    wait(driver, lambda d: css(d, "#wf-rows .wf-row.critical"))
    marked = {node.get_attribute("data-span-id") for node in css(driver, "#wf-rows .wf-row.critical")}
    assert marked == set(data["onPath"]) and len(marked) > 2
    assert "show-critical" in css(driver, "#waterfall")[0].get_attribute("class")
    assert css(driver, "#show-critical")[0].is_selected()
    dimmed = [n for n in css(driver, "#wf-rows .wf-row") if "critical" not in n.get_attribute("class")]
    assert dimmed and float(dimmed[0].value_of_css_property("opacity")) < 1
    css(driver, "#show-critical")[0].click()
    assert "show-critical" not in css(driver, "#waterfall")[0].get_attribute("class")
    driver.execute_script("document.getElementById('self-times').open = true")
    rows = css(driver, "#self-times tbody tr")
    assert len(rows) == len(data["byOperation"]) > 3
    assert rows[0].find_elements("css selector", "td")[0].text == data["byOperation"][0][0]
    driver.save_screenshot(str(tmp_path / "critical.png"))
    assert severe_console_messages(driver) == []
