"""The critical path (Jaeger's walk back from the end) and self-time, on traces with known answers."""

import io
import random

import pytest

import synthetic
from gwtrace.analysis.critical_path import critical_path, on_path, path_share, self_time_by_operation, self_times
from gwtrace.cli.show import show
from gwtrace.store import TraceStore


def span(sid, start, end, parent="", name=None):
    return {"span_id": sid, "parent_span_id": parent, "start_ns": start, "end_ns": end, "name": name or sid}


def path(spans):
    return [(seg.span_id, seg.start_ns, seg.end_ns) for seg in critical_path(spans)]


def test_sequential_children_and_the_gaps_between_them():
    spans = [span("root", 0, 100), span("a", 10, 40, "root"), span("b", 50, 90, "root")]
    assert path(spans) == [("root", 0, 10), ("a", 10, 40), ("root", 40, 50), ("b", 50, 90), ("root", 90, 100)]


def test_overlapping_children_the_last_to_finish_holds_up_the_parent():
    spans = [span("root", 0, 100), span("a", 10, 80, "root"), span("b", 20, 90, "root")]
    assert path(spans) == [("root", 0, 20), ("b", 20, 90), ("root", 90, 100)]


def test_nested_spans_are_followed_down():
    spans = [span("root", 0, 100), span("a", 0, 100, "root"), span("a1", 20, 60, "a")]
    assert path(spans) == [("a", 0, 20), ("a1", 20, 60), ("a", 60, 100)]
    assert on_path(spans) == {"root", "a", "a1"}
    assert "root" not in path_share(spans)


def test_a_child_that_outlives_its_parent_is_clipped():
    spans = [span("root", 0, 100), span("a", 50, 150, "root")]
    assert path(spans) == [("root", 0, 50), ("a", 50, 100)]


def test_clock_skew_a_child_that_starts_before_its_parent_is_clipped():
    spans = [span("root", 100, 200), span("a", 50, 150, "root"), span("gone", 10, 20, "root")]
    assert path(spans) == [("a", 100, 150), ("root", 150, 200)]


def test_orphans_hang_under_the_root_and_zero_length_spans_do_no_harm():
    spans = [span("root", 0, 100), span("orphan", 30, 70, "missing"), span("zero", 80, 80, "root")]
    assert path(spans) == [("root", 0, 30), ("orphan", 30, 70), ("root", 70, 80), ("root", 80, 100)]


def test_the_path_covers_the_root_exactly_once():
    rng = random.Random(1)
    for _ in range(50):
        spans = [span("root", 0, 1000)]
        for index in range(30):
            parent = rng.choice([s["span_id"] for s in spans])
            start = rng.randrange(-50, 1000)
            spans.append(span(f"s{index}", start, start + rng.randrange(0, 400), parent))
        segments = critical_path(spans)
        assert segments[0].start_ns == 0 and segments[-1].end_ns == 1000
        for before, after in zip(segments, segments[1:]):
            assert before.end_ns == after.start_ns          # contiguous, no overlap


def test_self_time_is_duration_minus_the_union_of_children():
    spans = [span("root", 0, 100), span("a", 10, 40, "root", "x"), span("b", 30, 90, "root", "x")]
    assert self_times(spans) == {"root": 20, "a": 30, "b": 60}
    assert self_time_by_operation(spans) == [("x", 90, 2), ("root", 20, 1)]


def test_show_critical_path_on_a_glidein_trace(tmp_path):
    request = synthetic.glidein_trace(random.Random(2), 1_790_000_000 * 10**9, n_jobs=3)
    with TraceStore(tmp_path / "t.db") as store:
        store.ingest(request)
        trace_id = store.last_trace_id()
    out = io.StringIO()
    assert show(trace_id, False, str(tmp_path / "t.db"), out, critical=True) == 0
    text = out.getvalue()
    lines = text.splitlines()
    assert lines[2].startswith("* glidein_startup.sh")
    starred = [line for line in lines if line.startswith("* ")]
    assert any("condor_job_wrapper.sh" in line for line in starred)      # the jobs set the glidein's length
    assert "self-time by operation" in text and "condor_job_wrapper.sh" in text.split("self-time by operation")[1]
