"""Worker text in human output: control characters escaped, never sent raw.

Span names, attribute values, site and entry names, hold reasons: most of what
``gwtrace show``, ``analyze``, ``job``, ``glideins``, ``account`` and ``now``
print comes from worker nodes, which are untrusted. Printed raw, an ESC or BEL
in it drives the reader's terminal: ``ESC ] 0 ; PWNED BEL`` retitles the
window, ``ESC [ 2 J`` clears the screen, a CR overwrites the line, other
sequences fake or hide output (and some terminals answer queries as if typed).
So every text output goes through one function, ``printable``, by writing to
``terminal_text(stream)``: C0 controls but the line feed, DEL, C1 controls and
the Unicode bidirectional controls (which reorder what is shown) become
visible escapes (``\\x1b``, ``\\r``, ``\\u202e``). gwtrace itself writes no
control character but the line feed, so its own layout is unchanged; a line
feed inside worker text still breaks the line. The machine formats (``--format
json``, ``csv``) stay exact: they are for programs, not terminals.
"""

from __future__ import annotations

import io
import re
from typing import Any, TextIO

_CONTROL_RE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\t": "\\t", "\r": "\\r"}


def _escape(match: "re.Match[str]") -> str:
    char = match.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def printable(text: str) -> str:
    """``text`` with every control character but the line feed written as an escape."""
    return _CONTROL_RE.sub(_escape, text)


class TerminalText(io.TextIOBase):
    """A text stream that writes everything through ``printable`` to another."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(printable(text))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.stream.isatty()

    def __getattr__(self, name: str) -> Any:      # encoding, fileno, ... of the real stream
        return getattr(self.stream, name)


def terminal_text(stream: TextIO) -> TextIO:
    """``stream`` for human output: control characters escaped (once, even if wrapped twice)."""
    return stream if isinstance(stream, TerminalText) else TerminalText(stream)  # type: ignore[return-value]
