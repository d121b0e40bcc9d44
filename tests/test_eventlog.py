"""Reading the event log: partial lines, monsters, truncation."""

import os

from gwtrace.sidecar.eventlog import EventLogReader, create_event_log
from gwtrace.wire.events import MAX_LINE_BYTES


def test_log_is_private(tmp_path):
    path = create_event_log(str(tmp_path))
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_partial_line_waits_for_its_newline(tmp_path):
    path = create_event_log(str(tmp_path))
    with open(path, "ab") as f:
        f.write(b"one\ntw")
    r = EventLogReader(path)
    assert r.read_lines() == ([b"one"], 0)
    with open(path, "ab") as f:
        f.write(b"o\n")
    assert r.read_lines() == ([b"two"], 0)
    assert r.offset == os.path.getsize(path)


def test_oversized_lines_are_skipped_without_buffering_them(tmp_path):
    path = create_event_log(str(tmp_path))
    r = EventLogReader(path)
    with open(path, "ab") as f:
        f.write(b"a\n" + b"x" * (MAX_LINE_BYTES + 10) + b"\nb\n")
    assert r.read_lines() == ([b"a", b"b"], 1)
    # An unterminated 1 MB line, read in small chunks, then its end.
    with open(path, "ab") as f:
        f.write(b"y" * (1 << 20))
    lines, oversized = r.read_lines(max_bytes=MAX_LINE_BYTES * 2)
    assert lines == [] and oversized == 0
    while r.read_lines(max_bytes=MAX_LINE_BYTES * 2) != ([], 0):
        pass
    with open(path, "ab") as f:
        f.write(b"tail\nc\n")
    assert r.read_lines() == ([b"c"], 1)


def test_truncated_or_replaced_log_restarts_at_zero(tmp_path):
    path = create_event_log(str(tmp_path))
    with open(path, "ab") as f:
        f.write(b"1\n2\n")
    r = EventLogReader(path)
    r.read_lines()
    with open(path, "wb") as f:
        f.write(b"3\n")
    assert r.read_lines() == ([b"3"], 0) and r.resets == 1
    # Replaced by a rename (a new inode while the old one still exists).
    with open(path + ".new", "wb") as f:
        f.write(b"4\n5\n")
    os.replace(path + ".new", path)
    assert r.read_lines() == ([b"4", b"5"], 0) and r.resets == 2


def _event(kind: str, span: str, pad: int) -> bytes:
    head = f"gw1\t{kind}\t1700000000.000001\t42\t{'a' * 32}\t{span}"
    tail = "\t0" if kind == "E" else f"\t-\t0\t01\t-\tname\tpad={'p' * pad}"
    return (head + tail).encode()


def test_a_line_torn_by_gnu_bash_with_another_between_is_put_back_together(tmp_path):
    """GNU bash (its own malloc) writes a line over 2016 bytes in two write(2)s:
    another writer's line between them made one garbled line and one orphan,
    and both events were lost (bats/known-failures.txt)."""
    from gwtrace.sidecar.eventlog import TORN_PIECE
    TORN_AT = 2 * TORN_PIECE                                   # bash 5.2's buffer
    from gwtrace.wire.events import parse_line
    path = create_event_log(str(tmp_path))
    long_a, short_b, long_c = _event("B", "1" * 16, 3000), _event("E", "2" * 16, 0), _event("B", "3" * 16, 2500)
    before, after = _event("B", "0" * 16, 10), _event("E", "4" * 16, 0)
    r = EventLogReader(path)
    with open(path, "ab") as f:
        f.write(before + b"\n" + long_a[:TORN_AT] + short_b + b"\n")
    assert r.read_lines() == ([before, short_b], 0)            # the rest of A may come in a later read
    with open(path, "ab") as f:
        f.write(long_a[TORN_AT:] + b"\n" + long_c[:TORN_AT] + after + b"\n" + long_c[TORN_AT:] + b"\n")
    assert r.read_lines() == ([long_a, after, long_c], 0) and r.rejoined == 2
    for line in (long_a, short_b, long_c):
        parse_line(line)
    # A first part whose rest never came is skipped; the lines around it are kept.
    with open(path, "ab") as f:
        f.write(long_a[:TORN_AT] + short_b + b"\n" + after + b"\n" + before + b"\n")
    assert r.read_lines() == ([short_b, after, before], 1)
    # A line with "gw1<TAB>" where a torn one would have the next head, not a head, is left alone.
    odd = _event("B", "5" * 16, 0)
    odd += b"q" * (TORN_AT - len(odd)) + b"gw1\tk=x"
    assert odd.find(b"gw1\t", 1) == TORN_AT
    with open(path, "ab") as f:
        f.write(odd + b"\n")
    assert r.read_lines() == ([odd], 0)


def test_a_line_torn_in_several_pieces_by_an_older_gnu_bash_is_put_back_together(tmp_path):
    """GNU bash before 5.2 (its own malloc) buffers 1008 bytes: a 3 500-byte line goes
    out in up to four write(2)s, and another writer's line can land after any of them."""
    from gwtrace.sidecar.eventlog import TORN_PIECE
    from gwtrace.wire.events import parse_line
    path = create_event_log(str(tmp_path))
    long_a = _event("B", "1" * 16, 3400)
    short_b, short_c, short_d = (_event("E", s * 16, 0) for s in "234")
    one, two = TORN_PIECE, 2 * TORN_PIECE
    r = EventLogReader(path)
    with open(path, "ab") as f:
        f.write(long_a[:one] + short_b + b"\n" + long_a[one:two] + short_c + b"\n" + long_a[two:] + b"\n")
        f.write(short_d + b"\n")
    assert r.read_lines() == ([short_b, short_c, long_a, short_d], 0) and r.rejoined == 1
    parse_line(long_a)
    # Torn after its third piece only (pieces 1-3 in one write as bash 5.2's 2016 + 1008 would not be).
    with open(path, "ab") as f:
        f.write(long_a[:3 * one] + short_b + b"\n" + long_a[3 * one:] + b"\n")
    assert r.read_lines() == ([short_b, long_a], 0) and r.rejoined == 2
