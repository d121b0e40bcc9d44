"""Reading the append-only event log that bash writes into.

The log is the transport *and* the journal: every event is on disk before the
sidecar sees it, so a sidecar killed at any moment resumes from its last
checkpointed offset and loses nothing. This module only knows about bytes and
offsets; what the lines mean is protocol.py's business.
"""

from __future__ import annotations

import os
import re
from typing import List, Optional, Tuple

from gwtrace.wire.events import MAX_LINE_BYTES

EVENT_LOG_NAME = "events.log"
READ_CHUNK = 4 << 20
#: GNU bash built with its own malloc (GNU's default; distributions build
#: --without-bash-malloc) line-buffers stdout (lib/sh/setlinebuf.c): 1008 bytes
#: before 5.2, 2016 from 5.2 on. Its printf writes a longer line in pieces of
#: that size and the rest, and another writer's line can land between two
#: pieces. Both sizes are multiples of this one, so a piece ends at one of them.
TORN_PIECE = 1008
#: Where a piece can end inside a line below 4096 bytes (MAX_LINE_BYTES).
TORN_ENDS = (TORN_PIECE, 2 * TORN_PIECE, 3 * TORN_PIECE)
#: An event line's head: version, kind, time, pid, trace and span ids.
_START = b"gw1\x09"           # an event line starts so (a reader: not a producer of lines)
_HEAD = re.compile(rb"gw1\x09[A-Z]\t[0-9]+(?:\.[0-9]+)?\t[0-9]+\t[0-9a-f]{32}\t[0-9a-f]{16}(?:\t|$)")


class EventLogReader:
    """Yields complete lines after a byte offset, tolerating abuse.

    * A line still being written (no newline yet) is left for the next read.
    * A line longer than MAX_LINE_BYTES is skipped up to its newline and
      reported as one oversized line, without holding it in memory.
    * A log that shrank or was replaced (other inode) restarts at offset 0,
      and the event is counted by the caller through ``resets``.
    * A line torn by GNU bash's stdout buffer (1008 or 2016 bytes, see
      ``TORN_PIECE``), with another writer's line between two of its writes,
      is put back together: the physical line is its first part (ending at a
      multiple of 1008 bytes) followed by the other line, and its rest is the
      next line that does not start an event, which may itself hold a further
      piece followed by another writer's line. A first part whose rest never
      came is skipped (counted with the oversized lines); the lines around it
      are kept.
    """

    def __init__(self, path: str, offset: int = 0, inode: Optional[int] = None) -> None:
        self.path = path
        self.offset = offset
        self.inode = inode
        self.resets = 0
        self.rejoined = 0        # torn lines put back together
        self._skipping = False   # inside an oversized line
        self._torn: Optional[bytes] = None   # a torn line's first part, waiting for its rest

    def size(self) -> int:
        try:
            return os.stat(self.path).st_size
        except FileNotFoundError:
            return 0

    def pending_bytes(self) -> int:
        return max(0, self.size() - self.offset)

    def read_lines(self, max_bytes: int = READ_CHUNK) -> Tuple[List[bytes], int]:
        """Return (complete lines, number of oversized lines skipped).

        ``self.offset`` advances past what was returned or skipped.
        """
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return [], 0
        try:
            st = os.fstat(fd)
            if (self.inode is not None and st.st_ino != self.inode) or st.st_size < self.offset:
                self.offset, self._skipping = 0, False
                self.resets += 1
            self.inode = st.st_ino
            if st.st_size <= self.offset:
                return [], 0
            data = os.pread(fd, min(max_bytes, st.st_size - self.offset), self.offset)
        finally:
            os.close(fd)
        return self._split(data)

    def _split(self, data: bytes) -> Tuple[List[bytes], int]:
        lines: List[bytes] = []
        oversized = 0
        pos = 0
        if self._skipping:
            nl = data.find(b"\n")
            if nl < 0:
                self.offset += len(data)
                return lines, 0
            pos = nl + 1
            self._skipping = False
            oversized += 1
        last_nl = data.rfind(b"\n")
        if last_nl >= pos:
            for line in data[pos:last_nl].split(b"\n"):
                if len(line) > MAX_LINE_BYTES:
                    oversized += 1
                elif self._torn is not None or _torn_at(line, 0) is not None:
                    oversized += self._mend(line, lines)
                else:
                    lines.append(line)
            pos = last_nl + 1
        tail = len(data) - pos
        if tail > MAX_LINE_BYTES:
            # An unterminated monster: drop it now, and the rest of it later.
            self._skipping = True
            pos = len(data)
        self.offset += pos
        return lines, oversized

    def _mend(self, line: bytes, lines: List[bytes]) -> int:
        """One physical line while a torn line is pending, or that holds one's
        first part: append what it holds to ``lines``; return the number of
        parts skipped (0 or 1)."""
        skipped = 0
        if self._torn is not None:
            if not line.startswith(_START):
                more = _torn_at(line, len(self._torn))
                if more is None:
                    lines.append(self._torn + line)    # the rest of the torn line
                    self._torn = None
                    self.rejoined += 1
                    return 0
                # A middle piece, then another writer's line: still waiting for the rest.
                self._torn += line[:more]
                lines.append(line[more:])
                return 0
            self._torn, skipped = None, 1          # its rest never came
        cut = _torn_at(line, 0) if line.startswith(_START) and _HEAD.match(line) else None
        if cut is not None:
            self._torn, line = line[:cut], line[cut:]
        lines.append(line)
        return skipped


def _torn_at(line: bytes, before: int) -> Optional[int]:
    """Where another writer's event starts inside ``line`` at a point where
    a torn line's piece can end (``before`` bytes of that torn line already
    read), or None."""
    for end in TORN_ENDS:
        at = end - before
        if 0 < at < len(line) and line.startswith(_START, at) and _HEAD.match(line, at):
            return at
    return None


def create_event_log(directory: str) -> str:
    """Create the log (mode 0600) if needed and return its path."""
    path = os.path.join(directory, EVENT_LOG_NAME)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.close(fd)
    return path
