"""The bounded, redacted tail of a file under a job's scratch directory (the back channel's ``tail``).

The path comes from the controller (a user asking for their running job's
log), the directory from the job wrapper; neither is trusted to be harmless.
So the file is reached by walking the relative path one component at a
time from an open descriptor of the scratch directory, each component opened
with ``O_NOFOLLOW`` (a symlink anywhere on the way is refused, also one
swapped in after a check: there is no check-then-open), the last one with
``O_NONBLOCK`` (a FIFO or a device never blocks the sidecar) and then
required to be a regular file. At most ``MAX_TAIL_BYTES`` are read, from
the end; every line goes through the redaction rule (wire/redact.py).
Python 3.9-compatible, standard library only.
"""

from __future__ import annotations

import os
import stat
from typing import Dict, Union

from gwtrace.wire.redact import redact_message

MAX_TAIL_BYTES = 1024 * 1024
MAX_PATH_CHARS = 1024
MAX_DEPTH = 32


class TailRefused(Exception):
    """A tail that is not sent; the message is the one-line reason in the result."""


def allowed_parts(path: object) -> "list[str]":
    """The components of an allow-listed path: relative, no ``..``, no empty name, no NUL; else TailRefused."""
    if not isinstance(path, str) or not path or len(path) > MAX_PATH_CHARS:
        raise TailRefused("path must be a non-empty relative path")
    if path.startswith("/") or "\0" in path:
        raise TailRefused("path must be relative to the job's scratch directory")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise TailRefused("path must stay inside the job's scratch directory (no '..')")
    if len(parts) > MAX_DEPTH:
        raise TailRefused("path too deep")
    return parts


def _open_below(scratch: str, parts: "list[str]") -> int:
    """A descriptor of scratch/parts..., no symlink followed on the way (O_NOFOLLOW at each step)."""
    flags_dir = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(scratch, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        raise TailRefused("the job's scratch directory is not there") from None
    try:
        for name in parts[:-1]:
            try:
                nxt = os.open(name, flags_dir, dir_fd=fd)
            except OSError:
                raise TailRefused("no such directory (or a symlink) on the path") from None
            os.close(fd)
            fd = nxt
        try:
            return os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
                           | getattr(os, "O_CLOEXEC", 0), dir_fd=fd)
        except OSError as exc:
            import errno

            if exc.errno == errno.ELOOP:
                raise TailRefused("a symlink is not followed") from None
            raise TailRefused("no such file") from None
    finally:
        os.close(fd)


def file_tail(scratch: str, path: object, max_bytes: object) -> Dict[str, Union[str, int, bool]]:
    """``{"text", "bytes", "truncated"}``: the redacted last ``max_bytes`` of scratch/path; TailRefused if not allowed."""
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
        raise TailRefused("max_bytes must be a positive integer")
    max_bytes = min(max_bytes, MAX_TAIL_BYTES)
    parts = allowed_parts(path)
    fd = _open_below(scratch, parts)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise TailRefused("not a regular file")
        size = info.st_size
        start = max(0, size - max_bytes)
        chunks = []
        left = min(max_bytes, size)
        offset = start
        while left > 0:
            data = os.pread(fd, min(left, 65536), offset)
            if not data:
                break
            chunks.append(data)
            left -= len(data)
            offset += len(data)
        whole_line = start == 0 or os.pread(fd, 1, start - 1) == b"\n"
    finally:
        os.close(fd)
    raw = b"".join(chunks)
    text = raw.decode("utf-8", "replace")
    if not whole_line and "\n" in text:
        text = text[text.index("\n") + 1:]        # no half line at the cut
    text = "\n".join(redact_message(line) for line in text.split("\n"))
    return {"text": text, "bytes": size, "truncated": start > 0}
