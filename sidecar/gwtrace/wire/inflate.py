"""Inflating gzip that came from a worker node, never beyond a bound.

Why: a few kilobytes of gzip can hold a gigabyte of zeros.  ``gzip.decompress``
and ``zlib.decompress`` build the whole output before anyone can look at its
size (a 1.4 MB ``.err`` took 2.1 GB), so everything gwtrace inflates from a
node (glidein output blocks, the encoded XML result, shipped logs) goes through
``gunzip``, which stops at ``limit`` bytes and says so.  Pure Python (zlib), so
the worker-node archive can carry it.
"""

from __future__ import annotations

import zlib


class InflateLimit(ValueError):
    """The data inflates to more than the limit; nothing was kept."""


def gunzip(packed: bytes, limit: int) -> bytes:
    """The content of one gzip member (or several, concatenated), at most ``limit`` bytes.

    Raises ``InflateLimit`` past the limit, ``zlib.error`` or ``EOFError`` for damaged or cut data.
    """
    out = []
    size = 0
    pending = packed
    while pending:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        part = inflater.decompress(pending, limit + 1 - size)
        size += len(part)
        if size > limit or inflater.unconsumed_tail:
            raise InflateLimit(f"inflates to more than {describe(limit)}")
        if not inflater.eof:
            raise EOFError("compressed data ends early")
        out.append(part)
        pending = inflater.unused_data
        if pending.strip(b"\0") == b"":     # gzip's trailing padding
            break
    return out[0] if len(out) == 1 else b"".join(out)


def describe(size: int) -> str:
    """A byte count as people write limits: 4 MiB, 64 MiB, 512 KiB."""
    if size >= 1 << 20 and size % (1 << 20) == 0:
        return f"{size >> 20} MiB"
    if size >= 1 << 10 and size % (1 << 10) == 0:
        return f"{size >> 10} KiB"
    return f"{size} bytes"
