"""Assembling events into spans, and everything that can go wrong doing it."""

from gwtrace.sidecar.assembler import Assembler
from gwtrace.wire.events import Event

T = "4bf92f3577b34da6a3ce929d0e0e4736"
A, B = "aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"


def begin(span, parent="", ts=100, name="n", attrs=()):
    return Event("B", ts, 1, T, span, parent, False, 1, "", name, "", attrs)


def end(span, status="0", ts=200):
    return Event("E", ts, 1, T, span, status=status)


def test_nested_spans_finish_in_order_with_status():
    asm = Assembler()
    assert asm.feed(begin(A, name="outer", attrs=(("site", "FNAL"),))) is None
    asm.feed(begin(B, parent=A, ts=110, name="inner"))
    asm.feed(Event("V", 120, 1, T, B, name="tick", attributes=(("i", 1),)))
    asm.feed(Event("A", 130, 1, T, B, attributes=(("k", "v"),)))
    inner = asm.feed(end(B, status="3", ts=150))
    outer = asm.feed(end(A, status="0", ts=190))
    assert (inner.name, inner.parent_id, inner.start_us, inner.end_us) == ("inner", A, 110, 150)
    assert (inner.status, inner.status_message, inner.attributes["process.exit.code"]) == ("error", "exit code 3", 3)
    assert inner.attributes["k"] == "v" and inner.events == [("tick", 120, {"i": 1})]
    assert (outer.status, outer.attributes["site"]) == ("ok", "FNAL")
    assert asm.open == {}


def test_status_words_and_messages():
    asm = Assembler()
    for span, status in ((A, "ok"), (B, "error:disk\\tfull")):
        asm.feed(begin(span))
        done = asm.feed(end(span, status=status))
        assert done is not None
    assert done.status == "error" and done.status_message == "disk\tfull"


def test_unknown_spans_and_duplicates_are_counted_not_fatal():
    asm = Assembler()
    assert asm.feed(end(A)) is None
    assert asm.feed(Event("A", 1, 1, T, B, attributes=(("k", 1),))) is None
    asm.feed(begin(A))
    asm.feed(begin(A))
    assert asm.counters["events_unknown_span"] == 2
    assert asm.counters["events_duplicate"] == 1
    assert len(asm.open) == 1


def test_end_before_start_clock_step_never_gives_negative_duration():
    asm = Assembler()
    asm.feed(begin(A, ts=500))
    assert asm.feed(end(A, ts=400)).end_us == 500


def test_open_spans_end_as_incomplete_errors():
    asm = Assembler()
    asm.feed(begin(A))
    asm.feed(begin(B, parent=A))
    done = asm.end_all(900, "sidecar stopped")
    assert {s.span_id for s in done} == {A, B}
    for s in done:
        assert s.status == "error" and s.end_us == 900
        assert s.attributes["gwtrace.incomplete"] is True
    assert asm.counters["spans_incomplete"] == 2 and asm.open == {}


def test_snapshot_restore_continues_a_span():
    asm = Assembler()
    asm.feed(begin(A, attrs=(("x", 1),)))
    asm.feed(Event("V", 150, 1, T, A, name="e"))
    again = Assembler()
    again.restore(asm.snapshot())
    done = again.feed(end(A))
    assert done.attributes["x"] == 1 and done.events == [("e", 150, {})]
