"""The state directory: privacy, ownership and crash consistency."""

import json
import os

import pytest

from gwtrace.wire.span import SpanRecord
from gwtrace.sidecar.statedir import Checkpoint, Spool, SpoolError


def span(i):
    return SpanRecord("4bf92f3577b34da6a3ce929d0e0e4736", f"{i + 1:016x}", "", False, 1, "", f"s{i}", 1, 7, 2,
                      "ok", "", {"k": "tab\there"}, [("e", 1, {"x": 1})])


def test_directory_must_be_private(tmp_path):
    d = tmp_path / "open"
    d.mkdir(mode=0o755)
    os.chmod(d, 0o755)
    with pytest.raises(SpoolError, match="other users"):
        Spool(str(d))
    assert oct(os.stat(Spool(str(tmp_path / "new")).dir).st_mode & 0o777) == "0o700"


def test_one_owner_at_a_time(tmp_path):
    a, b = Spool(str(tmp_path / "gw")), Spool(str(tmp_path / "gw"))
    a.acquire()
    assert b.is_owned() and b.owner_pid() == os.getpid()
    with pytest.raises(SpoolError, match="another sidecar"):
        b.acquire()
    a.release()
    assert not b.is_owned()


def test_batches_round_trip_and_uncommitted_ones_are_discarded(tmp_path):
    sp = Spool(str(tmp_path / "gw"))
    sp.write_batch(0, [span(0), span(1)])
    sp.write_batch(1, [span(2)])
    sp.save_checkpoint(Checkpoint(offset=10, next_seq=1))
    assert [s.to_json() for s in sp.read_batch(0)] == [span(0).to_json(), span(1).to_json()]
    # Batch 1 was written but never committed: a restart regenerates it.
    assert sp.discard_uncommitted(sp.load_checkpoint().next_seq) == 1
    assert sp.batch_seqs() == [0]


def test_corrupt_checkpoint_is_a_clear_error(tmp_path):
    sp = Spool(str(tmp_path / "gw"))
    with open(sp.path("state.json"), "w") as f:
        f.write("{not json")
    with pytest.raises(SpoolError, match="corrupt checkpoint"):
        sp.load_checkpoint()


def test_outbox_rows_keep_every_field_and_type(tmp_path):
    # Spans without their lines (restored from a checkpoint, ended incomplete)
    # are journaled as positional rows.
    sp = Spool(str(tmp_path / "gw"))
    rich = SpanRecord("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "1111111111111111", True, 1,
                      "rojo=00f067aa0ba902b7", "héllo ✓\tname", 10, 7, 20, "error", "exit code 3",
                      {"process.exit.code": 3, "ok": True, "n": "08", "x.name": "true"},
                      [("tick", 15, {"i": 1}), ("tock", 16, {})], dropped_attributes=2, dropped_events=5)
    sp.write_batch(0, [rich, span(1)])
    with open(sp.batch_path(0), "rb") as f:
        doc = json.loads(f.read())
    assert doc["version"] == 3 and doc["lines"] == "" and len(doc["rows"][0]) == len(doc["fields"])
    back = sp.read_batch(0)
    assert back == [rich, span(1)] and sp.batch_span_count(0) == 2
    assert back[0].events[0] == ("tick", 15, {"i": 1}) and type(back[0].attributes["ok"]) is bool


def _corpus():
    """Event lines of every shape the assembler treats differently."""
    t, t2 = "4bf92f3577b34da6a3ce929d0e0e4736", "0af7651916cd43dd8448eb211c80319c"
    out = []

    def line(*fields):
        out.append("\t".join(fields).encode())

    for i in range(40):
        s = f"{i + 1:016x}"
        line("gw1", "B", f"17000000{i:02d}.000001", "42", t, s, "-" if i % 5 == 0 else f"{i % 3 + 100:016x}",
             str(i % 2), "01", "rojo=00f067aa0ba902b7" if i % 4 == 0 else "-", f"step\\t{i}", f"i={i}",
             "flag", "x.name=true", "v=08", "msg=tab\\there")
        if i % 3 == 0:
            line("gw1", "V", f"17000000{i:02d}.5", "42", t, s, "tick", "n=1")
            line("gw1", "A", f"17000000{i:02d}.6", "42", t, s, "late=true", f"i={i * 2}")
        if i % 7 == 0:
            line("gw1", "B", "1", "42", t, s, "-", "0", "01", "-", "duplicate")
            line("gw1", "E", "1", "42", t2, s, "0")                                  # unknown span
            out.append(b"gw1\tV\t5\t42\t" + t.encode() + b"\t" + s.encode() + b"\t\xff\xfe bad utf-8")
        if i == 11:
            for k in range(300):                                                   # past MAX_EVENTS
                line("gw1", "V", "1700000011", "42", t, s, f"e{k}")
        if i == 12:
            line("gw1", "A", "1700000012", "42", t, s, *[f"k{k}=v" for k in range(140)])  # past MAX_ATTRIBUTES
        if i == 13:
            for k in range(600):                                                   # past MAX_SPAN_LINES
                line("gw1", "A", "1700000013", "42", t, s, f"a{k % 3}={k}")
        status = ["0", "3", "ok", "error", "error:disk\\tfull", "255"][i % 6]
        line("gw1", "E", f"17000000{i:02d}.9", "42", t, s, status, *(["k=v"] if i % 2 else []))
        if i == 20:                                                                # a reused span id
            line("gw1", "B", "1700000099", "43", t, s, "-", "0", "01", "-", "again")
            line("gw1", "E", "1700000099.5", "43", t, s, "0")
    return out


def test_journaled_lines_assemble_into_the_same_spans(tmp_path):
    from gwtrace.sidecar.assembler import Assembler
    from gwtrace.wire.events import parse_line

    asm = Assembler()
    finished = []
    for raw in _corpus():
        done = asm.feed(parse_line(raw), raw)
        if done is not None:
            finished.append(done)
    with_lines = [s for s in finished if s.lines is not None]
    assert len(with_lines) == len(finished) - 1           # the span past MAX_SPAN_LINES
    expected = [s.to_json() for s in with_lines] + [s.to_json() for s in finished if s.lines is None]
    sp = Spool(str(tmp_path / "gw"))
    sp.write_batch(0, finished)
    assert all(s.lines is None for s in finished)           # released once journaled
    with open(sp.batch_path(0), "rb") as f:
        doc = json.loads(f.read())
    assert len(doc["rows"]) == 1 and doc["lines"].count("\n") > 80
    back = sp.read_batch(0)
    assert [s.to_json() for s in back] == expected
    assert sp.batch_span_count(0) == len(finished)


def test_version_2_outbox_files_are_still_read(tmp_path):
    from gwtrace.wire.span import ROW_FIELDS, to_row

    sp = Spool(str(tmp_path / "gw"))
    with open(sp.batch_path(2), "w") as f:
        json.dump({"version": 2, "fields": ROW_FIELDS, "spans": [to_row(span(0)), to_row(span(1))]}, f)
    assert sp.read_batch(2) == [span(0), span(1)] and sp.batch_span_count(2) == 2


def test_version_1_outbox_files_are_still_read(tmp_path):
    # Written by a sidecar before outbox version 2: delivered after an upgrade.
    sp = Spool(str(tmp_path / "gw"))
    with open(sp.batch_path(3), "w") as f:
        json.dump({"version": 1, "spans": [span(0).to_json(), span(1).to_json()]}, f)
    assert sp.read_batch(3) == [span(0), span(1)]


def _fields():
    from gwtrace.wire.span import ROW_FIELDS

    return list(ROW_FIELDS)


T = "4bf92f3577b34da6a3ce929d0e0e4736"


@pytest.mark.parametrize("doc", [
    {"version": 9, "spans": []},
    [1, 2],
    {"version": 2, "fields": ["trace_id"], "spans": [["x"]]},
    {"version": 2, "fields": _fields(), "spans": [["short row"]]},
    {"version": 3, "spans": 1, "lines": "garbage", "fields": _fields(), "rows": []},
    {"version": 3, "spans": 1, "lines": f"gw1\tB\t1\t1\t{T}\t{'1' * 16}\t-\t0\t01\t-\tnever ended",
     "fields": _fields(), "rows": []},
    {"version": 3, "spans": 2, "lines": f"gw1\tB\t1\t1\t{T}\t{'1' * 16}\t-\t0\t01\t-\tn\n"
                                        f"gw1\tE\t2\t1\t{T}\t{'1' * 16}\t0", "fields": _fields(), "rows": []},
])
def test_unknown_outbox_versions_and_damaged_batches_are_unreadable_not_misread(tmp_path, doc):
    sp = Spool(str(tmp_path / "gw"))
    with open(sp.batch_path(0), "w") as f:
        json.dump(doc, f)
    with pytest.raises((ValueError, KeyError)):
        sp.read_batch(0)
