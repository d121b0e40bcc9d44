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
