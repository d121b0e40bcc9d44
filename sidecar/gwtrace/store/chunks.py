"""From an OTLP export request to the chunks the store writes, without SQL.

A chunk is the spans of one trace that arrived together from one resource and
one instrumentation scope, kept as the serialized ``ScopeSpans``, plus the
summary (time range, counts, root) that the indexed tables hold.  All of this
is pure Python on one request, so it runs before the write lock is taken.
"""

from __future__ import annotations

import operator
from operator import attrgetter
from typing import Any, Dict, List, Optional, Sequence, Tuple

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans, Span

from . import limits
from .ops import ranges_of
from .values import STATUS_ERROR, STATUS_OK, STATUS_UNSET, ZERO_SPAN, ZERO_TRACE, is_root
from .wire import scope_spans_slices, spans_field

#: Everything ingest needs from a span, read in one C-level call per span.
SPAN_FIELDS = attrgetter(
    "trace_id",
    "span_id",
    "parent_span_id",
    "name",
    "kind",
    "start_time_unix_nano",
    "end_time_unix_nano",
    "status.code",
)
# Indexes into the tuples produced by SPAN_FIELDS.
_TID, _SID, _PARENT, _NAME, _KIND, _START, _END, _STATUS = range(8)

#: How many rejected spans a partial-success message names.
_PROBLEMS_NAMED = 5


class Chunk:
    """Summary of the spans of one trace from one ScopeSpans, ready to insert.

    Built from per-field columns (one ``zip`` over the extracted tuples) so
    that every summary is a C-level pass, not a Python loop per span.
    """

    __slots__ = (
        "trace_id", "start_ns", "max_start_ns", "end_ns", "max_dur_ns", "n_spans", "n_errors",
        "status", "root_name", "root_start_ns", "first_name", "span_ids", "id_set", "ops", "body",
    )

    def __init__(self, trace_id: bytes, rows: Sequence[tuple], body: bytes, columns: Optional[Sequence[tuple]] = None):
        _, sids, parents, names, kinds, starts, ends, statuses = columns if columns is not None else zip(*rows)
        self.trace_id = trace_id
        self.body = body
        self.n_spans = len(rows)
        self.start_ns = min(starts)
        self.max_start_ns = max(starts)
        self.end_ns = max(ends)
        self.max_dur_ns = max(map(operator.sub, ends, starts))
        self.n_errors = statuses.count(STATUS_ERROR)
        if self.n_errors:
            self.status = STATUS_ERROR
        elif STATUS_OK in statuses:
            self.status = STATUS_OK
        else:
            self.status = STATUS_UNSET
        self.first_name = names[starts.index(self.start_ns)]
        self.root_name, self.root_start_ns = _root(rows, parents, names, starts)
        self.span_ids = b"".join(sids)
        self.id_set = set(sids)
        self.ops = ranges_of(names, kinds, starts)  # (name, kind) -> [earliest, latest start]

    def summary(self) -> Tuple[Any, ...]:
        """The summary columns of the ``chunks`` table, in schema order (start_ns .. body)."""
        return (self.start_ns, self.max_start_ns, self.end_ns, self.max_dur_ns, self.n_spans, self.n_errors,
                self.status, self.root_name, self.root_start_ns, self.first_name, self.span_ids, self.body)


def _root(rows: Sequence[tuple], parents: tuple, names: tuple, starts: tuple) -> Tuple[Optional[str], Optional[int]]:
    """(name, start) of the chunk's earliest root span, or (None, None) without one."""
    n_roots = parents.count(b"") + parents.count(ZERO_SPAN)
    if n_roots == 1:
        i = parents.index(b"") if b"" in parents else parents.index(ZERO_SPAN)
        return names[i], starts[i]
    if n_roots > 1:
        root = min((r for r in rows if is_root(r[_PARENT])), key=lambda r: r[_START])
        return root[_NAME], root[_START]
    return None, None


#: What one request writes: (resource, resource schema_url, its chunks) per ResourceSpans.
Plan = List[Tuple[Resource, str, List[Chunk]]]


def split_ids(blob: bytes) -> List[bytes]:
    """The span ids of a chunk's ``span_ids`` column."""
    return [blob[i:i + 8] for i in range(0, len(blob), 8)]


def _span_problem(row: tuple) -> Optional[str]:
    tid, sid, parent = row[_TID], row[_SID], row[_PARENT]
    if len(tid) != 16 or tid == ZERO_TRACE:
        return "trace_id must be 16 bytes and not all zero"
    if len(sid) != 8 or sid == ZERO_SPAN:
        return "span_id must be 8 bytes and not all zero"
    if parent and len(parent) != 8:
        return "parent_span_id must be empty or 8 bytes"
    if not row[_START]:
        return "start_time_unix_nano is missing"
    if row[_END] < row[_START]:
        return "end_time_unix_nano is before start_time_unix_nano"
    return None


def _all_valid(columns: Sequence[tuple]) -> bool:
    """True if every span is valid; C-level passes over columns (the common case)."""
    tids, sids, parents, _, _, starts, ends, _ = columns
    return (
        set(map(len, tids)) == {16} and ZERO_TRACE not in tids
        and set(map(len, sids)) == {8} and ZERO_SPAN not in sids
        and set(map(len, parents)) <= {0, 8}
        and 0 not in starts
        and not any(map(operator.lt, ends, starts))
    )


def chunk_of_spans(trace_id: bytes, ss: ScopeSpans, spans: Sequence[Span]) -> Chunk:
    """A chunk of some spans of ``ss`` (all of ``trace_id``), under ``ss``'s scope."""
    head = ScopeSpans(scope=ss.scope, schema_url=ss.schema_url).SerializeToString()
    body = head + b"".join([spans_field(s.SerializeToString()) for s in spans])
    return Chunk(trace_id, list(map(SPAN_FIELDS, spans)), body)


def chunks_of(ss: ScopeSpans, raw: Optional[bytes] = None) -> Tuple[List[Chunk], List[Tuple[int, str]], int]:
    """Split one ScopeSpans into per-trace chunks; also return rejected spans (index, reason) and how many
    span names were cut to ``limits.MAX_NAME_CHARS`` (here, where every name is read anyway)."""
    spans = ss.spans
    rows = list(map(SPAN_FIELDS, spans))
    columns = list(zip(*rows))
    cut = 0
    if max(map(len, columns[_NAME])) > limits.MAX_NAME_CHARS:
        cut = limits.cut_names(spans)
        rows = list(map(SPAN_FIELDS, spans))
        columns = list(zip(*rows))
        raw = None
    if _all_valid(columns):
        tids = columns[_TID]
        if tids.count(tids[0]) == len(rows) and len(set(columns[_SID])) == len(rows):
            # The common case: one trace, nothing to drop; keep the message as is.
            body = raw if raw is not None else ss.SerializeToString()
            return [Chunk(tids[0], rows, body, columns)], [], cut
        bad: List[Tuple[int, str]] = []
    else:
        bad = [(i, p) for i, p in ((i, _span_problem(r)) for i, r in enumerate(rows)) if p is not None]
    skip = {i for i, _ in bad}
    groups: Dict[bytes, Dict[bytes, int]] = {}
    for i, r in enumerate(rows):
        if i not in skip:
            # A span repeated within the request: the later copy wins.
            groups.setdefault(r[_TID], {})[r[_SID]] = i
    chunks = [chunk_of_spans(trace_id, ss, [spans[i] for i in sorted(by_id.values())])
              for trace_id, by_id in groups.items()]
    return chunks, bad, cut


def request_slices(request: ExportTraceServiceRequest, raw: Optional[bytes]) -> Optional[List[List[bytes]]]:
    """The encoded ScopeSpans of ``raw`` if it is the encoding of ``request``, else None."""
    if raw is None:
        return None
    try:
        slices = scope_spans_slices(raw)
    except (ValueError, IndexError):
        return None
    if len(slices) != len(request.resource_spans) or any(
        len(sl) != len(rs.scope_spans) for sl, rs in zip(slices, request.resource_spans)
    ):
        return None
    return slices


def plan_request(request: ExportTraceServiceRequest, raw: Optional[bytes] = None,
                 slices: Optional[List[List[bytes]]] = None, cut: int = 0) -> Tuple[Plan, int, str]:
    """What to write for a request: (plan, rejected span count, partial-success message).

    ``raw``, the request's own encoding when the caller has it, lets whole
    ScopeSpans be stored without re-serializing them (``slices``: its
    ScopeSpans, when the caller has already found them).  ``cut``: how many
    spans ``limits.enforce`` cut; with the names cut here, the message says so.
    """
    if slices is None:
        slices = request_slices(request, raw)
    rejected = 0
    problems: List[str] = []
    plan: Plan = []
    for ri, rs in enumerate(request.resource_spans):
        resource_chunks: List[Chunk] = []
        for si, ss in enumerate(rs.scope_spans):
            if not ss.spans:
                continue
            chunks, bad, names_cut = chunks_of(ss, slices[ri][si] if slices is not None else None)
            cut += names_cut
            for index, reason in bad:
                rejected += 1
                if len(problems) < _PROBLEMS_NAMED:
                    problems.append(f"resource_spans[{ri}].scope_spans[{si}].spans[{index}]: {reason}")
            resource_chunks.extend(chunks)
        if resource_chunks:
            plan.append((rs.resource, rs.schema_url, resource_chunks))
    notes = []
    if rejected:
        notes.append(f"rejected {rejected} span(s): " + "; ".join(problems))
        if rejected > len(problems):
            notes.append(f"and {rejected - len(problems)} more")
    if cut:
        notes.append(f"cut {cut} span(s), resource(s) or scope(s) to gwtrace's limits (marked {limits.TRUNCATED_KEY})")
    return plan, rejected, "; ".join(notes)
