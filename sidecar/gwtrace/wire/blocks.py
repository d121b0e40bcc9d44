"""Spans that ride home inside the glidein's own output.

Many worker nodes cannot reach any collector, but the factory always gets the
glidein's stdout/stderr back (``job.C.P.out``/``.err``), and the glidein
already ships its encoded XML and condor logs that way. At stop, whatever the
sidecar could not deliver is written there as framed, compressed, checksummed
blocks; ``gwtrace ingest`` finds them on the factory and forwards the spans.
This module is the format (framing, finding, verifying); the sidecar's
``gwtrace.sidecar.ship`` writes its outbox in it.

Block format (docs/protocol.md, "Blocks")::

    === gwtrace block v1 begin kind=otlp spans=512 bytes=20480 sha256=<64 hex> host=wn1 ===
    <base64 of gzip(payload), 76 characters a line>
    === gwtrace block v1 end sha256=<64 hex> ===

``kind=otlp``: the payload is an OTLP ``ExportTraceServiceRequest`` (protobuf).
``kind=metrics``: the payload is an OTLP ``ExportMetricsServiceRequest`` (the sidecar's resource
samples; ``points=N`` in the header instead of ``spans=``).
``kind=events``: the payload is raw event-log lines (``shim/gwtrace-ship-spool``
writes these on nodes where no sidecar could run). ``bytes`` and ``sha256``
describe the payload before compression, so a block is verified end to end
and its digest identifies it (ingest is idempotent on it).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import re
import socket
import zlib
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Union

from gwtrace.wire.inflate import InflateLimit, describe, gunzip

BEGIN_RE = re.compile(rb"^=== gwtrace block v1 begin (?P<meta>[^\n]*?) ===\r?$", re.M)
END_RE = re.compile(rb"^=== gwtrace block v1 end sha256=(?P<sha>[0-9a-f]{64}) ===\r?$")
B64_LINE_RE = re.compile(rb"^[A-Za-z0-9+/=]+\r?$")
LINE_WIDTH = 76
#: What one block may inflate to (docs/protocol.md, "Blocks"): a block of otlp holds at most SPANS_PER_BLOCK
#: spans (a few MB), one of events a node's spool (~200 bytes an event). A block over it is skipped, named by
#: file and offset, without being inflated further: the factory must not be exhausted by a node's output.
MAX_PAYLOAD_BYTES = 64 << 20


def frame(kind: str, payload: bytes, spans: Optional[int] = None, host: Optional[str] = None,
          points: Optional[int] = None) -> str:
    """One block, as text lines ending with a newline."""
    digest = hashlib.sha256(payload).hexdigest()
    meta = [f"kind={kind}"]
    if spans is not None:
        meta.append(f"spans={spans}")
    if points is not None:
        meta.append(f"points={points}")
    meta += [f"bytes={len(payload)}", f"sha256={digest}", f"host={host or socket.gethostname()}"]
    body = base64.b64encode(gzip.compress(payload, mtime=0)).decode("ascii")
    lines = [body[i:i + LINE_WIDTH] for i in range(0, len(body), LINE_WIDTH)]
    return "\n".join([f"=== gwtrace block v1 begin {' '.join(meta)} ===", *lines,
                      f"=== gwtrace block v1 end sha256={digest} ===", ""])


SPANS_PER_BLOCK = 4096
#: The kinds of block there are: OTLP spans, OTLP metrics (resource samples), raw event lines.
KINDS = ("otlp", "metrics", "events")


@dataclass
class Block:
    """A verified block found in a file."""

    offset: int
    kind: str
    payload: bytes
    sha256: str
    meta: Dict[str, str]


@dataclass
class BadBlock:
    """A block that failed verification: where, and why."""

    offset: int
    reason: str


def _meta(raw: bytes) -> Dict[str, str]:
    out = {}
    for word in raw.decode("utf-8", "replace").split():
        key, sep, value = word.partition("=")
        if sep:
            out[key] = value
    return out


def find_blocks(data: bytes) -> Iterator[Union[Block, BadBlock]]:
    """Every block in ``data`` (a glidein .out/.err), verified, in order."""
    pos = 0
    while True:
        m = BEGIN_RE.search(data, pos)
        if m is None:
            return
        offset = m.start()
        meta = _meta(m.group("meta"))
        lines: List[bytes] = []
        cursor = m.end() + 1
        end_sha: Optional[str] = None
        while cursor < len(data):
            nl = data.find(b"\n", cursor)
            line = data[cursor:] if nl < 0 else data[cursor:nl]
            cursor = len(data) if nl < 0 else nl + 1
            end = END_RE.match(line)
            if end:
                end_sha = end.group("sha").decode()
                break
            if not B64_LINE_RE.match(line):
                # Something else started: the block was cut short.
                cursor -= len(line) + (0 if nl < 0 else 1)
                break
            lines.append(line.rstrip(b"\r"))
        pos = max(cursor, m.end())
        yield _verify(offset, meta, lines, end_sha)


def _verify(offset: int, meta: Dict[str, str], lines: List[bytes], end_sha: Optional[str]) -> Union[Block, BadBlock]:
    kind, sha = meta.get("kind", ""), meta.get("sha256", "")
    if kind not in KINDS:
        return BadBlock(offset, f"unknown block kind {kind!r}")
    if not re.fullmatch(r"[0-9a-f]{64}", sha):
        return BadBlock(offset, "no sha256 in the block header")
    if end_sha is None:
        return BadBlock(offset, "truncated: no end line")
    if end_sha != sha:
        return BadBlock(offset, "end line does not match the header")
    if meta.get("bytes", "").isdigit() and int(meta["bytes"]) > MAX_PAYLOAD_BYTES:
        return BadBlock(offset, f"over the limit: {meta['bytes']} bytes, at most {describe(MAX_PAYLOAD_BYTES)}")
    try:
        packed = base64.b64decode(b"".join(lines), validate=True)
        payload = gunzip(packed, MAX_PAYLOAD_BYTES)
    except InflateLimit as exc:
        return BadBlock(offset, f"over the limit: {exc}")
    except (ValueError, OSError, EOFError, zlib.error) as exc:
        return BadBlock(offset, f"corrupt: {exc}")
    if meta.get("bytes", "").isdigit() and int(meta["bytes"]) != len(payload):
        return BadBlock(offset, f"corrupt: {len(payload)} bytes, header says {meta['bytes']}")
    if hashlib.sha256(payload).hexdigest() != sha:
        return BadBlock(offset, "corrupt: sha256 mismatch")
    return Block(offset, kind, payload, sha, meta)


