"""``gwtrace show --last``: the most recent whole trace, not a concurrent
run's unfinished one (issue 9)."""

from __future__ import annotations

import io

from test_store import TRACE_A, TRACE_B, make_request

from gwtrace.cli.show import is_finished, show
from gwtrace.store import TraceStore


def test_last_skips_a_newer_unfinished_trace(tmp_path) -> None:
    db = str(tmp_path / "traces.db")
    store = TraceStore(db)
    # A finished run: root 1 covers its children.
    store.ingest(make_request([dict(trace=TRACE_A, span=1, name="finished-run", start=0, dur=10_000),
                               dict(trace=TRACE_A, span=2, parent=1, name="work", start=100, dur=500)]))
    # A run still going, started later: only spans that ended so far, whose
    # parents (the script, the root) are still open.
    store.ingest(make_request([dict(trace=TRACE_B, span=11, parent=10, name="fn-a", start=20_000, dur=100),
                               dict(trace=TRACE_B, span=12, parent=10, name="fn-b", start=20_200, dur=100)]))
    store.close()
    out = io.StringIO()
    assert show(None, True, db, out) == 0
    assert out.getvalue().startswith(f"trace {TRACE_A.hex()} ")
    assert "finished-run" in out.getvalue()


def test_last_falls_back_to_the_newest_when_none_is_whole(tmp_path) -> None:
    db = str(tmp_path / "traces.db")
    store = TraceStore(db)
    store.ingest(make_request([dict(trace=TRACE_B, span=11, parent=10, name="a", start=0, dur=100),
                               dict(trace=TRACE_B, span=12, parent=10, name="b", start=200, dur=100)]))
    store.close()
    out = io.StringIO()
    assert show(None, True, db, out) == 0
    assert out.getvalue().startswith(f"trace {TRACE_B.hex()} ")


def test_is_finished() -> None:
    def span(i: str, parent: str, start: int, end: int) -> dict:
        return {"span_id": i, "parent_span_id": parent, "start_ns": start, "end_ns": end}
    assert is_finished([span("1", "", 0, 10), span("2", "1", 1, 5)])
    assert is_finished([span("1", "remote", 0, 10), span("2", "1", 1, 5)])     # parent in another trace part
    assert not is_finished([span("2", "1", 1, 5), span("3", "1", 6, 8)])        # two orphans: root still open
    assert not is_finished([span("2", "1", 1, 5), span("3", "2", 2, 8)])        # child outlives its "root"


def test_last_is_the_newest_run_even_when_it_continued_a_traceparent(tmp_path) -> None:
    """The newest run continued a TRACEPARENT (issue 30): its top spans' parent is the caller's span, remote,
    not in the store; it is the one shown, not an older whole trace."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource

    from gwtrace.export.otlp import to_readable_spans
    from gwtrace.wire.span import SpanRecord

    def span(trace, sid, parent, remote, name, start, end):
        return SpanRecord(trace_id=trace, span_id=sid, parent_id=parent, parent_remote=remote, flags=1,
                          tracestate="", name=name, start_us=start, pid=1, end_us=end)

    old, new, caller = "a" * 32, "b" * 32, "c" * 16
    db = str(tmp_path / "traces.db")
    with TraceStore(db) as store:
        for spans in ([span(old, "1" * 16, "", False, "older-run", 1_000, 9_000),
                       span(old, "2" * 16, "1" * 16, False, "work", 2_000, 3_000)],
                      [span(new, "3" * 16, caller, True, "step-one", 20_000, 21_000),
                       span(new, "4" * 16, caller, True, "step-two", 21_000, 22_000)]):
            store.ingest(encode_spans(to_readable_spans(spans, Resource({"service.name": "gwtrace"}))))
        # a run still going, newer still, that did not continue anything: orphans with local parents
        store.ingest(encode_spans(to_readable_spans([span("d" * 32, "5" * 16, "6" * 16, False, "fn", 30_000, 30_500),
                                                     span("d" * 32, "7" * 16, "6" * 16, False, "fn", 31_000, 31_500)],
                                                    Resource({"service.name": "gwtrace"}))))
    out = io.StringIO()
    assert show(None, True, db, out) == 0
    assert out.getvalue().startswith(f"trace {new} ") and "step-two" in out.getvalue()
