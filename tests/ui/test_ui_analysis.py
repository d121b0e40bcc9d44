"""The analysis pages in headless Chromium: the overview's charts (drawn, non-empty on screen, each mark a
link to exactly the glideins behind it), the hints with the planted problems, the outliers, and each span's
percentile on the trace page. Screenshots go to the test's temporary directory."""

from __future__ import annotations

import io
import json
import urllib.request
from urllib.parse import parse_qsl, urlsplit

import pytest

from conftest import demo_factory
from test_ui_browser import css, driver, open_page, severe_console_messages, start_server, stop_server, wait  # noqa: F401

demo_factory()   # skips this module without HTCondor's bindings (the demo's Condor-G logs need them)

pytest.importorskip("matplotlib", reason="the charts are drawn by matplotlib ([factory] extra)")

CHARTS = ("phases_by_group", "phase_lengths", "failure_rate_by_site")


@pytest.fixture(scope="module")
def planted(planted_factory, planted_store):
    where = planted_factory[1]
    proc, url = start_server(planted_store)
    yield url, where
    stop_server(proc)


def _json(url):
    with urllib.request.urlopen(url, timeout=60) as resp:
        return json.load(resp)


def _ready(d, page):
    wait(d, lambda d: d.execute_script("return document.body.dataset.page") == page
         and d.execute_script("return document.body.dataset.ready") == "1", timeout=30)


def _inked(png: bytes) -> float:
    """Share of a screenshot's pixels that are not (nearly) white: a drawn chart has plenty."""
    from matplotlib.image import imread

    pixels = imread(io.BytesIO(png), format="png")[..., :3]
    return float((pixels.min(axis=2) < 0.9).mean())


def _open_overview(d, url, query=""):
    open_page(d, f"{url}/analysis?{query}")
    wait(d, lambda d: len(css(d, ".chart-svg[data-drawn='1']")) == 3, timeout=30)


def test_overview_charts_are_drawn_and_a_bar_leads_to_exactly_its_glideins(planted, driver, tmp_path):  # noqa: F811
    url, where = planted
    d = driver
    _open_overview(d, url)
    d.save_screenshot(str(tmp_path / "analysis.png"))
    for name in CHARTS:
        box = css(d, f"#chart-{name}")[0]
        assert d.execute_script("return arguments[0].querySelectorAll('svg path, svg use').length", box) > 50
        assert d.execute_script("return arguments[0].querySelectorAll('svg a[href^=\"/glideins?\"]').length", box) > 0
        png = box.screenshot_as_png
        (tmp_path / f"{name}.png").write_bytes(png)
        assert _inked(png) > 0.03, f"{name} looks empty on screen"
    # nothing in the inline charts can run or lead elsewhere
    assert d.execute_script("return document.querySelectorAll('.chart-svg script, .chart-svg [style]').length") == 0
    assert d.execute_script(
        "return [...document.querySelectorAll('.chart-svg a')].every(a => a.getAttribute('href').startsWith('/glideins?'))")
    rows = css(d, "#an-phases tbody tr")
    assert len(rows) == len(_json(f"{url}/ui/api/analysis")["phases"])

    entry = where["long_tail"]
    phases = _json(f"{url}/ui/api/analysis")["phases"]
    expected = next(r["glideins"] for r in phases if r["entry"] == entry and r["phase"] == "idle_tail")
    bar = css(d, f"#chart-phases_by_group a[href='/glideins?entry={entry}&phase=idle_tail'] path")[0]
    d.execute_script("arguments[0].scrollIntoView({block: 'center'})", bar)
    bar.click()
    _ready(d, "glideins")
    assert urlsplit(d.current_url).path == "/glideins"
    listed = css(d, "#gl-table tbody tr")
    assert len(listed) == expected >= 10
    assert {r.find_elements("css selector", "td")[2].text for r in listed} == {entry}
    assert "with time in idle tail" in css(d, "#gl-title")[0].text
    assert all(float(r.find_elements("css selector", "td")[-1].text) > 0 for r in listed)
    assert severe_console_messages(d) == []


def test_a_failure_point_leads_to_that_day_s_failed_glideins(planted, driver):  # noqa: F811
    url, where = planted
    d = driver
    _open_overview(d, url, "by=site")
    site = where["failing"]
    links = css(d, f"#chart-failure_rate_by_site a[href*='site={site}&failed=1']")
    assert links
    href = links[-1].get_dom_attribute("href")
    day = int(dict(parse_qsl(urlsplit(href).query))["day"])
    trend = next(t for t in _json(f"{url}/ui/api/analysis")["trends"] if t["site"] == site)
    expected = next(x["failed"] for x in trend["days"] if x["day"] == day)
    point = links[-1].find_element("css selector", "use, path")
    d.execute_script("arguments[0].scrollIntoView({block: 'center'})", point)
    point.click()
    _ready(d, "glideins")
    listed = css(d, "#gl-table tbody tr")
    assert len(listed) == expected > 0
    assert all(r.find_elements("css selector", "td")[6].text.startswith("ERROR") for r in listed)
    assert {r.find_elements("css selector", "td")[1].text for r in listed} == {site}
    assert severe_console_messages(d) == []


def test_hints_page_shows_the_planted_problems_and_a_glidein_opens_its_trace(planted, driver, tmp_path):  # noqa: F811
    url, where = planted
    d = driver
    open_page(d, f"{url}/hints")
    d.save_screenshot(str(tmp_path / "hints.png"))
    hints = css(d, "#hint-list li.hint")
    api = _json(f"{url}/ui/api/hints")["hints"]
    assert len(hints) == len(api) >= 6
    assert [h.get_attribute("data-rank") for h in hints] == [str(h["rank"]) for h in api]
    assert [h["cost_unit"] for h in api][-1] == "requested_hours"   # the CE wait, ranked on its own, last
    text = {h.get_attribute("data-kind"): h.text for h in hints}
    assert "fails in" in text["failing_script"] and where["failing"] in text["failing_script"]
    assert "main/validate_node.sh" in text["failing_script"]
    assert where["long_tail"] in text["idle_tail"] and "GLIDEIN_Max_Tail" in text["idle_tail"]
    assert where["no_jobs"] in text["no_jobs"] and "never got a job" in text["no_jobs"]
    assert where["ce_wait"] in text["ce_wait"] and where["preempted"] in text["preempted_jobs"]
    assert where["slow_script"] in text["slow_script"] and "GLIDEIN_Retire_Time" in text["preempted_jobs"]
    first = hints[0]
    assert f"{api[0]['cost_per_day']:.1f} pilot h/day" in first.text and "Do:" in first.text
    assert api[0]["summary"] in first.find_element("css selector", ".hint-summary").text

    link = first.find_elements("css selector", ".hint-glideins a.trace-link")
    assert len(link) == len(api[0]["glideins"])
    trace_id = api[0]["glideins"][0]["trace_id"]
    assert link[0].text == api[0]["glideins"][0]["glidein"]
    link[0].click()
    _ready(d, "trace")
    assert urlsplit(d.current_url).path == "/trace/" + trace_id
    assert trace_id in css(d, "#trace-meta")[0].text
    assert severe_console_messages(d) == []


def test_outliers_page_and_the_span_percentile_on_the_trace_page(planted, driver, tmp_path):  # noqa: F811
    url, _ = planted
    d = driver
    open_page(d, f"{url}/outliers")
    found = _json(f"{url}/ui/api/outliers")["outliers"]
    rows = css(d, "#out-table tbody tr")
    assert len(rows) == len(found) > 0
    top = found[0]
    cells = [c.text for c in rows[0].find_elements("css selector", "td")]
    assert cells[:3] == [top["glidein"], top["entry"], top["phase"]]
    assert float(cells[3]) == pytest.approx(top["seconds"] / 60, abs=0.05)
    assert float(cells[5]) == top["score"]
    rows[0].find_element("css selector", "a.trace-link").click()
    _ready(d, "trace")
    assert urlsplit(d.current_url).path == "/trace/" + top["trace_id"]
    wait(d, lambda d: any("Percentile" in (r.get_attribute("title") or "") for r in css(d, ".wf-row")))
    name = top["phase"].split(":", 1)[1]
    row = next(r for r in css(d, ".wf-row") if r.find_element("css selector", ".span-name").text == name)
    assert float(row.get_attribute("data-percentile")) >= 90
    row.click()
    line = css(d, "#detail .percentile")[0].text
    assert line.startswith("Percentile ") and top["phase"] in line and top["entry"] in line
    d.save_screenshot(str(tmp_path / "trace.png"))
    assert severe_console_messages(d) == []


HOSTILE_SVG = """<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" onload="window.__x=1">
<script>window.__x = 2</script><style>*{fill:red}</style>
<foreignObject><div xmlns="http://www.w3.org/1999/xhtml">hi</div></foreignObject>
<a xlink:href="javascript:window.__x=3"><rect width="5" height="5"/></a>
<a xlink:href="https://elsewhere.invalid/x"><rect width="5" height="5"/></a>
<a xlink:href="/glideins?entry=E&amp;phase=running" target="_blank"><path d="M0 0L1 1" style="fill: #123456"
   onclick="window.__x=4"/></a>
<use xlink:href="https://elsewhere.invalid/s.svg#p"/><use xlink:href="#local"/>
<set attributeName="onmouseover" to="window.__x=5"/></svg>"""


def test_a_chart_keeps_only_drawing_and_links_to_the_glideins(planted, driver):  # noqa: F811
    url, _ = planted
    d = driver
    open_page(d, f"{url}/analysis?by=site")
    kept = d.execute_script("""
        const doc = new DOMParser().parseFromString(arguments[0], "image/svg+xml");
        gw.cleanSvg(doc.documentElement, "/glideins?");
        const svg = document.importNode(doc.documentElement, true);
        document.body.append(svg);
        return {tags: [...svg.querySelectorAll("*")].map((n) => n.localName),
                attrs: [...svg.querySelectorAll("*"), svg].flatMap((n) => [...n.attributes].map((a) => a.name)),
                links: [...svg.querySelectorAll("a[href]")].map((a) => a.getAttribute("href")),
                uses: [...svg.querySelectorAll("use[href]")].map((u) => u.getAttribute("href")),
                x: window.__x === undefined ? null : window.__x};""", HOSTILE_SVG)
    assert not {"script", "style", "foreignObject", "set", "div"} & set(kept["tags"])
    assert not [a for a in kept["attrs"] if a.startswith("on") or a in ("style", "target", "xlink:href")]
    assert kept["links"] == ["/glideins?entry=E&phase=running"] and kept["uses"] == ["#local"]
    assert kept["x"] is None
    assert "fill" not in kept["attrs"]  # styles are dropped, not applied: the server sends attributes instead


def test_a_bad_parameter_is_one_message(planted, driver):  # noqa: F811
    url, _ = planted
    for page, query, text in (("analysis", "by=frontend", "by must be one of"),
                              ("hints", "threshold=nope=1", "not a threshold"),
                              ("outliers", "since=someday", "not a time")):
        open_page(driver, f"{url}/{page}?{query}")
        message = css(driver, "#message")[0]
        assert message.is_displayed() and text in message.text and message.text.count("\n") == 0
