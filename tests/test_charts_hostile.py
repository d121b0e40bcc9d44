"""Charts with names from worker nodes (issue 28): a site or entry name is text, never matplotlib markup.

``$\\foo$`` used to make every analysis chart a 500 (mathtext), 60 nested ``\\sqrt{`` a RecursionError,
``$xxxx...$`` 23 s of CPU per chart."""

from __future__ import annotations

import io
import time

import pytest

pytest.importorskip("matplotlib")

from gwtrace.analysis.plots import CHARTS  # noqa: E402
from gwtrace.factory.account_plot import stacked_area  # noqa: E402

HOSTILE = [
    r"$\foo$",
    "$" + "\\sqrt{" * 60 + "x" + "}" * 60 + "$",
    "$" + "x" * 20_000 + "$",
    "a\\b $x^2$ \\\\ \\n",
    "\x1b]0;PWNED\x07" + "y" * 200,
]
DAY = 86400


def report(names):
    """An analysis report whose entries and sites are ``names``."""
    return {
        "phases": [{"entry": name, "phase": "script", "canonical_hours": 1.0 + i}
                   for i, name in enumerate(names)],
        "lengths": {"script": [10.0, 100.0, 1000.0]},
        "trends": [{"site": name, "worse": i == 0,
                    "days": [{"day": 19000 * DAY + d * DAY, "failure_rate": 0.1 * d, "failed": d} for d in range(3)]}
                   for i, name in enumerate(names)],
    }


@pytest.mark.parametrize("chart", sorted(CHARTS))
def test_hostile_names_are_drawn_as_text_and_fast(chart):
    out = io.BytesIO()
    began = time.monotonic()
    CHARTS[chart](report(HOSTILE), out, "svg")
    assert time.monotonic() - began < 10
    svg = out.getvalue().decode()
    assert svg.startswith("<?xml") and "</svg>" in svg
    if chart != "phase_lengths":      # the one chart without site or entry names
        assert "foo" in svg           # $\foo$ is drawn literally (as glyphs with their text in ids/comments)


def test_the_accounting_chart_title_is_text(tmp_path):
    path = tmp_path / "a.svg"
    rows = [{"bucket_start": 19000 * DAY, "goodput": 1.0, "overhead": 0.5, "validation_fail": 0.0,
             "decision_problem": 0.0, "misconfig_badput": 0.0, "preemption_badput": 0.0}]
    stacked_area(rows, str(path), r"pilot time at $\foo$ " + "$" + "\\sqrt{" * 60 + "$")
    assert path.stat().st_size > 1000


def test_the_analysis_page_charts_answer_with_hostile_sites(tmp_path):
    """The server's /ui/api/analysis/<chart>.svg: 200, not a 500, for a site named $\\foo$."""
    from gwtrace.factory.record import GlideinRecord
    from gwtrace.server import create_app
    from gwtrace.store import TraceStore

    with TraceStore(tmp_path / "t.db") as store:
        recs = []
        for i, site in enumerate(HOSTILE):
            rec = GlideinRecord(cluster=100 + i, proc=0)
            rec.site, rec.entry, rec.status = site, site, "ERROR" if i % 2 else "OK"
            rec.started, rec.ended = 1_700_000_000 + i * 600, 1_700_003_600 + i * 600
            rec.condor_start, rec.condor_end, rec.cpus, rec.memory_mb = rec.started + 60, rec.ended - 60, 8, 16000
            recs.append(rec)
        store.put_glidein_records(recs)
        client = create_app(store).test_client()
        for chart in CHARTS:
            began = time.monotonic()
            resp = client.get(f"/ui/api/analysis/{chart}.svg?since=1690000000&by=site")
            assert resp.status_code == 200, (chart, resp.get_data(as_text=True)[:300])
            assert time.monotonic() - began < 15
