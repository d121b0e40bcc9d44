"""Reading the append-only event log that bash writes into.

The log is the transport *and* the journal: every event is on disk before the
sidecar sees it, so a sidecar killed at any moment resumes from its last
checkpointed offset and loses nothing. This module only knows about bytes and
offsets; what the lines mean is protocol.py's business.
"""

from __future__ import annotations

import os
from typing import List, Optional, Tuple

from gwtrace.wire.events import MAX_LINE_BYTES

EVENT_LOG_NAME = "events.log"
READ_CHUNK = 4 << 20


class EventLogReader:
    """Yields complete lines after a byte offset, tolerating abuse.

    * A line still being written (no newline yet) is left for the next read.
    * A line longer than MAX_LINE_BYTES is skipped up to its newline and
      reported as one oversized line, without holding it in memory.
    * A log that shrank or was replaced (other inode) restarts at offset 0,
      and the event is counted by the caller through ``resets``.
    """

    def __init__(self, path: str, offset: int = 0, inode: Optional[int] = None) -> None:
        self.path = path
        self.offset = offset
        self.inode = inode
        self.resets = 0
        self._skipping = False   # inside an oversized line

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


def create_event_log(directory: str) -> str:
    """Create the log (mode 0600) if needed and return its path."""
    path = os.path.join(directory, EVENT_LOG_NAME)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.close(fd)
    return path
