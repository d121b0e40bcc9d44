"""The two pieces of the protobuf wire format gwtrace writes by hand: varints and length-delimited fields.

Why by hand at all: the store reframes encoded spans without decoding them
(``store/wire.py``), and the sidecar encodes its live snapshots with cached
pieces (``sidecar/snapshot_wire.py``); both need these, and only these.
"""

from __future__ import annotations


def varint(n: int) -> bytes:
    """A base-128 varint; a negative number as int64 (two's complement, 10 bytes)."""
    if n < 0:
        n += 1 << 64
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2)."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload
