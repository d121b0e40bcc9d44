"""At stop, the sidecar's undelivered spans and resource metrics ride home as blocks (``gwtrace.wire.blocks``).

The block format is the bottom layer's (the factory reads it); turning the
outbox into OTLP is the exporter's: this module joins the two on the sidecar's
side, so the format imports neither.
"""

from __future__ import annotations

import sys
from typing import Any, List, Optional, Sequence, TextIO, Tuple

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource

from gwtrace.export.otlp import to_readable_spans
from gwtrace.sidecar.statedir import Spool
from gwtrace.wire.blocks import SPANS_PER_BLOCK, frame


def ship_outbox(spool: Spool, out: TextIO) -> int:
    """Write every undelivered outbox batch to ``out``; return the spans shipped.

    Consecutive batches are merged into blocks of up to SPANS_PER_BLOCK spans.
    Batches are removed only after their block was written and flushed, so a
    failure half-way leaves the rest for the next attempt.
    """
    resource = Resource(spool.load_resource())
    shipped = 0
    pending: List[int] = []
    records: list = []

    def write_block() -> None:
        nonlocal shipped, pending, records
        request = encode_spans(to_readable_spans(records, resource))
        out.write(frame("otlp", request.SerializeToString(), spans=len(records)))
        out.flush()
        for seq in pending:
            spool.remove_batch(seq)
        shipped += len(records)
        pending, records = [], []

    for seq in spool.batch_seqs():
        records.extend(spool.read_batch(seq))
        pending.append(seq)
        if len(records) >= SPANS_PER_BLOCK:
            write_block()
    if records:
        write_block()
    return shipped


def ship_metrics(requests: Sequence[Tuple[Any, int]], out: TextIO) -> int:
    """Write each undelivered ``(ExportMetricsServiceRequest, points)`` to ``out`` as a
    ``kind=metrics`` block; return the points shipped."""
    shipped = 0
    for request, points in requests:
        out.write(frame("metrics", request.SerializeToString(), points=points))
        out.flush()
        shipped += points
    return shipped


def ship_stream(ship_to: "Optional[str | TextIO]") -> Optional[TextIO]:
    """Where ``--ship-to`` ships: a stream as it is, ``stderr``, else a file opened for appending."""
    if ship_to is None or not isinstance(ship_to, str):
        return ship_to
    if ship_to == "stderr":
        return sys.stderr
    return open(ship_to, "a", encoding="ascii")


def ship_leftovers(spool: Spool, ship_to: str) -> None:
    """Write the outbox a stopped sidecar left behind (``sidecar stop --ship-to``), and count it."""
    spool.acquire()
    try:
        stream = ship_stream(ship_to)
        try:
            shipped = ship_outbox(spool, stream)
        finally:
            if stream is not sys.stderr:
                stream.close()
        cp = spool.load_checkpoint()
        cp.counters["spans_shipped"] = cp.counters.get("spans_shipped", 0) + shipped
        spool.save_checkpoint(cp)
        st = spool.read_status()
        counters = st.setdefault("counters", {})
        counters["spans_shipped"] = counters.get("spans_shipped", 0) + shipped
        counters["spans_pending"] = max(0, counters.get("spans_pending", 0) - shipped)
        counters["outbox_bytes"] = 0
        spool.write_status(st)
    finally:
        spool.release()
