"""The traces a store keeps: ingest, retention, search, and (inherited from ``Reader``) the reads.

``TraceStore`` is one of these, with the live snapshots and the glidein records
(``gwtrace.store``); the reads are ``Reader``'s own methods, not delegations.
"""

from __future__ import annotations

import time
from typing import Any, Dict, List, Optional, Tuple

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from . import limits
from .chunks import plan_request, request_slices
from .query import TraceFinder, TraceQuery
from .reader import Reader
from .writer import Writer


class Traces(Reader):
    """OTLP spans stored as chunks (``store.chunks``), written by one ``Writer``, read by ``Reader``."""

    _writer: Writer
    retention_days: Optional[float]

    def ingest(self, request: ExportTraceServiceRequest, raw: Optional[bytes] = None) -> Tuple[int, int, str]:
        """Store the spans of an export request; return (accepted, rejected, message).

        What is over the limits (``store.limits``: attributes, events, links,
        string sizes) is cut and marked ``gwtrace.truncated`` first, in place;
        more spans than one request may hold raise ``limits.TooLarge``.  Spans
        with malformed ids or times are rejected and counted; the others are
        stored in one transaction.  The message names the first problems (and
        the cut spans), in the form OTLP's partial success ``error_message``
        expects.  ``raw``, the request's own encoding when the caller has it,
        lets whole ScopeSpans be stored without re-serializing them.
        """
        # Planned before taking the write lock: this is the Python part, and
        # other threads may write meanwhile (sqlite3 releases the GIL).
        slices = request_slices(request, raw)
        cut = limits.enforce(request, slices)
        if cut:
            raw, slices = None, None      # the cut ScopeSpans are encoded again
        plan, rejected, message = plan_request(request, raw, slices, cut)
        if plan:
            self._writer.write(plan)
        return sum(c.n_spans for _, _, chunks in plan for c in chunks), rejected, message

    def purge(self, now_ns: Optional[int] = None, older_than_days: Optional[float] = None) -> int:
        """Delete traces that ended before the retention window; return how many.

        Uses ``older_than_days`` or else the store's ``retention_days``; with
        neither, nothing is deleted.
        """
        days = older_than_days if older_than_days is not None else self.retention_days
        if days is None:
            return 0
        cutoff = (now_ns if now_ns is not None else time.time_ns()) - int(days * 86400 * 1e9)
        return self._writer.purge_before(cutoff)

    def find_traces(
        self,
        *,
        service: Optional[str] = None,
        operation: Optional[str] = None,
        span_kind: Optional[int] = None,
        resource_attrs: Optional[Dict[str, str]] = None,
        tags: Optional[Dict[str, str]] = None,
        start_ns: Optional[int] = None,
        end_ns: Optional[int] = None,
        min_duration_ns: Optional[int] = None,
        max_duration_ns: Optional[int] = None,
        min_trace_duration_ns: Optional[int] = None,
        status: Optional[int] = None,
        limit: int = 20,
    ) -> List[Dict[str, Any]]:
        """Summaries of the most recent traces matching every given condition (see ``store.query``)."""
        query = TraceQuery(
            service=service, operation=operation, span_kind=span_kind, resource_attrs=dict(resource_attrs or {}),
            tags=dict(tags or {}), start_ns=start_ns, end_ns=end_ns, min_duration_ns=min_duration_ns,
            max_duration_ns=max_duration_ns, min_trace_duration_ns=min_trace_duration_ns, status=status,
            limit=limit,
        )
        return TraceFinder(self._connections.reader(), self.resources).find(query)
