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
