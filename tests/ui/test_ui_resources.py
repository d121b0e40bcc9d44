"""What a job and its glidein used, under the trace's waterfall in headless Chromium: on the same time axis as
the bars (a sample taken when a span began is drawn at that span's left edge, to the pixel)."""

from __future__ import annotations

import pytest

from gwtrace.store import TraceStore
from metrics_gen import MB, request, resource, series_of, subject
from test_store import T0, TRACE_A, make_request
from test_ui_browser import css, driver, open_page, severe_console_messages, start_server, stop_server  # noqa: F401

S = 10**9
TRACE = TRACE_A.hex()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    db = tmp_path_factory.mktemp("res") / "traces.db"
    with TraceStore(db) as store:
        store.ingest(make_request([
            dict(span=1, name="glidein_startup.sh", start=0, dur=600 * S),
            dict(span=2, parent=1, name="user_job", start=100 * S, dur=300 * S),
            dict(span=3, parent=2, name="step", start=250 * S, dur=50 * S),
        ]))
        times = list(range(100, 401, 30)) + [400]
        job = subject(resource(glidein="u-1", trace_id=TRACE, request_cpus=1, request_memory_mb=1000),
                      rss=series_of(times, [int((200 + 10 * (t - 100)) * MB) for t in times], t0=T0),
                      cpu_user=series_of(times, [3.0 * (t - 100) for t in times], t0=T0))
        node = subject(resource("glidein", glidein="u-1"),
                       load=series_of([0, 300, 600], [4.0, 12.0, 6.0], t0=T0), cores=8)
        store.put_metrics(request([job, node]))
    proc, url = start_server(db)
    yield url
    stop_server(proc)


def _box(d, element):
    return d.execute_script("const r = arguments[0].getBoundingClientRect(); return [r.left, r.width];", element)


def _first_and_last_x(d, polyline):
    """Screen x of a polyline's first and last points (its SVG is stretched over the track)."""
    return d.execute_script("""
        const line = arguments[0], svg = line.ownerSVGElement, r = svg.getBoundingClientRect();
        const pts = line.points, w = svg.viewBox.baseVal.width;
        return [r.left + pts.getItem(0).x / w * r.width, r.left + pts.getItem(pts.numberOfItems - 1).x / w * r.width];
    """, polyline)


def test_the_resource_chart_sits_under_the_waterfall_on_its_time_axis(served, driver, tmp_path):  # noqa: F811
    d = driver
    open_page(d, served + "/trace/" + TRACE)
    rows = css(d, "#resources .res-row")
    assert [(r.get_attribute("data-chart"), r.get_attribute("data-subject")) for r in rows] == \
        [("cores", "job"), ("memory", "job"), ("load", "glidein")]
    labels = [r.find_elements("css selector", ".res-label")[0].text for r in rows]
    assert "job 123.0" in labels[0] and "up to 3 of 1 requested" in labels[0]
    assert "peak 3,200 MB of 1,000 MB requested" in labels[1]
    assert "on 8 cores" in labels[2]
    # the chart's track is the bars' track: same left edge, same width
    bar_track = css(d, "#wf-rows .wf-row .wf-track")[0]
    for row in rows:
        assert _box(d, row.find_elements("css selector", ".res-track")[0]) == pytest.approx(_box(d, bar_track), abs=0.5)
    # a sample at the job span's start and end is drawn at its bar's edges
    job_bar = css(d, "#wf-rows .wf-row")[1].find_elements("css selector", ".bar")[0]
    left, width = _box(d, job_bar)
    rss = css(d, "#resources .res-row[data-chart=memory] polyline[data-series=rss]")[0]
    first, last = _first_and_last_x(d, rss)
    assert first == pytest.approx(left, abs=1) and last == pytest.approx(left + width, abs=1)
    load = css(d, "#resources .res-row[data-chart=load] polyline")[0]
    assert _first_and_last_x(d, load) == pytest.approx(list(_box(d, bar_track))[:1] + [sum(_box(d, bar_track))], abs=1)
    # the request is a dashed line, and nothing on the page came from elsewhere
    assert css(d, "#resources .res-row[data-chart=memory] line.res-limit")
    d.save_screenshot(str(tmp_path / "resources.png"))
    assert severe_console_messages(d) == []


def test_a_trace_without_samples_shows_no_chart(served, driver):  # noqa: F811
    d = driver
    open_page(d, served + "/trace/" + "1" * 32)
    assert css(d, "#resources")[0].is_displayed() is False
