"""examples/glidein (make demo): a glidein-like run traced with no change to its scripts."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import GWTRACE, REPO, clean_env
from opentelemetry.proto.trace.v1.trace_pb2 import Status


def test_the_glidein_example_is_traced_end_to_end(receiver, tmp_path: Path) -> None:
    env = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.endpoint, TMPDIR=str(tmp_path),
                    OTEL_EXPORTER_OTLP_TIMEOUT="2000")
    out = subprocess.run([GWTRACE, "run", "--name", "factory", "--", "bash", str(REPO / "examples" / "glidein" / "factory.sh")],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "glidein 1 at DEMO_Good_Site: exit code 0" in out.stdout
    assert "glidein 2 at DEMO_Broken_Site: exit code 1" in out.stdout
    spans = receiver.spans
    by_name = {}
    for span in spans:
        by_name.setdefault(span.name, []).append(span)
    assert len({s.trace_id for s in spans}) == 1
    # Every script of both glideins, none of them changed, and the functions in them.
    assert len(by_name["glidein_startup.sh"]) == 2 and len(by_name["validate_node.sh"]) == 1
    assert sorted(s.status_code for s in by_name["check_blacklist.sh"]) == [Status.STATUS_CODE_OK,
                                                                              Status.STATUS_CODE_ERROR]
    assert len(by_name["gconfig_get"]) > 10
    # Two user jobs through the job wrapper, children of the working glidein's span.
    jobs = by_name["user_job"]
    assert len(jobs) == 2 and {j.attributes["htcondor.job.id"] for j in jobs} == {"1001.0", "1001.1"}
    glidein = next(g for g in by_name["glidein"] if g.span_id == jobs[0].parent_id)
    assert all(j.parent_id == glidein.span_id for j in jobs)
    assert not [s.name for s in spans if s.attributes.get("gwtrace.incomplete")]


def test_make_demo_ends_with_the_accounting_summary_and_the_top_hints(tmp_path: Path) -> None:
    import pytest

    pytest.importorskip("matplotlib")
    env = clean_env(GWTRACE_HOME=str(tmp_path / "home"), TMPDIR=str(tmp_path), DEMO_GLIDEINS="400")
    out = subprocess.run(["bash", str(REPO / "examples" / "demo.sh")], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "backfilled 400 glidein(s)" in out.stderr
    assert "== Where pilot time went" in text and "goodput" in text and "not computable: no demand data" in text
    figures = text[text.index("gwtrace figures"):text.index("== What to change first")]
    assert "GlideinWMS's analyze_entries figures" in figures and "3.10.12" in figures   # ours first, theirs labelled
    ours = figures.splitlines()[2].split()
    assert ours[0] == "total" and 0 < float(ours[-2]) <= 1                # efficiency: a share
    hints = text[text.index("== What to change first"):]
    pilot, requested = hints.split("ranked by canonical core-hours requested but not running")
    assert "1. [" in pilot and "3. [" in pilot and "4. [" not in pilot
    assert "killed by the glidein's end" in pilot  # the most costly planted problem comes first
    assert "at the CE of" in requested and "at the CE of" not in pilot   # CE waits ranked on their own
    urls = [line.split()[0] for line in text.splitlines() if line.strip().startswith("http://127.0.0.1:4318/trace/")]
    assert len(urls) == 2
    assert (tmp_path / "home" / "demo-accounting.svg").read_text().startswith("<?xml")
