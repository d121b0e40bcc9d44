"""The accounting page in headless Chromium: the matplotlib chart, the table by site, and a number
that leads to the glideins behind it."""

from __future__ import annotations

import json
import urllib.request

import pytest

from conftest import demo_factory
from test_ui_browser import css, driver, open_page, severe_console_messages, start_server, stop_server, wait  # noqa: F401

demo_factory()   # skips this module without HTCondor's bindings (the demo's Condor-G logs need them)

pytest.importorskip("matplotlib", reason="the chart is drawn by matplotlib ([factory] extra)")


@pytest.fixture(scope="module")
def server(planted_store):
    proc, url = start_server(planted_store)
    yield url
    stop_server(proc)


def _json(url):
    with urllib.request.urlopen(url, timeout=30) as resp:
        return json.load(resp)


def test_chart_table_and_the_glideins_behind_a_number(server, driver, tmp_path):  # noqa: F811
    query = "by=site&bucket=1d"
    data = _json(f"{server}/ui/api/accounting?{query}")
    open_page(driver, f"{server}/accounting?{query}")
    chart = css(driver, "#acct-chart")[0]
    wait(driver, lambda d: chart.get_attribute("src").startswith("data:image/svg+xml;base64,"))
    wait(driver, lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", chart) > 100)
    assert chart.is_displayed()
    driver.save_screenshot(str(tmp_path / "accounting.png"))

    rows = css(driver, "#acct-groups tbody tr")
    assert [r.get_attribute("data-group") for r in rows] == [g["group"] for g in data["groups"]]
    first = data["groups"][0]
    cells = rows[0].find_elements("css selector", "td")
    assert cells[0].text == first["group"]
    assert float(cells[-1].text) == pytest.approx(first["total"], abs=0.01)
    assert "not computable: no demand data" in css(driver, "#acct-demand")[0].text
    assert css(driver, "#acct-totals tbody tr")

    expected = _json(f"{server}/ui/api/glidein-records?site={first['group']}")["glideins"]
    cells[-1].find_element("css selector", "a").click()
    wait(driver, lambda d: d.execute_script("return document.body.dataset.page") == "glideins"
         and d.execute_script("return document.body.dataset.ready") == "1")
    listed = css(driver, "#gl-table tbody tr")
    assert len(listed) == len(expected) > 0
    assert {r.find_elements("css selector", "td")[1].text for r in listed} == {first["group"]}
    link = listed[0].find_element("css selector", "a.trace-link").get_attribute("href")
    assert link.endswith("/trace/" + expected[0]["trace_id"])
    assert severe_console_messages(driver) == []


def test_a_bad_bucket_is_one_message(server, driver):  # noqa: F811
    open_page(driver, f"{server}/accounting?bucket=2h")
    message = css(driver, "#message")[0]
    assert message.is_displayed() and "bucket must be one of" in message.text
