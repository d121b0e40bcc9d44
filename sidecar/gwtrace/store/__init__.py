"""SQLite trace store shared by the sidecar, `gwtrace show` and `gwtrace serve`.

Why it is shaped like this: the store has to ingest OTLP at a rate close to
what protobuf decoding alone allows, and a row per span (one Python conversion
and several B-tree inserts per span) is an order of magnitude too slow for
that.  So, like Tempo, the unit of storage is a *chunk*: the spans of one trace
that arrived together from one resource and one instrumentation scope, kept as
the serialized OTLP ``ScopeSpans`` message.  Everything a query filters on is
summarised in small, indexed tables at ingest time:

``resources``        one row per distinct OTLP Resource (service, glidein uuid)
``resource_attrs``   (key, value) -> resource, so every ``glidein.*`` identity
                     attribute (site, entry, factory, ...) is indexed
``chunks``           trace id, resource, time range, counts, span ids, body
``traces``           one row per trace: time range, span/error counts, status,
                     root span name and service
``trace_resources``  which resources (hence services, glideins) a trace touches
``trace_ops``        which (service, span name, kind) a trace contains, and when
                     its spans of it start (earliest, latest): search by
                     operation and window (``ops``)
``operations``       distinct (service, span name, kind), for the query API,
                     with how far its spans start behind their trace's start

Span-level filters that are not summarised (span attributes, span durations)
are answered by decoding the chunks of the candidate traces only.

Ingest is idempotent: a span whose (trace id, span id) is already stored is
kept once (the older chunk is rewritten without the copy that goes), so a
sidecar that retries a batch after a lost response never duplicates spans;
which copy stays is ``writer``'s rule (a live span over a backfilled one).

``TraceStore`` (here) is what one file keeps, by kind: ``traces.Traces``
(ingest, retention, search, and ``Reader``'s reads), ``live.LiveSnapshots``
(each running glidein's open spans), ``glidein_records.GlideinRecords``
(records, hourly cells, summaries) and ``metrics.Metrics`` (what each glidein
and job used: resource metrics per subject); ``parts`` is how other packages hand the
store their tables and rules (the store imports none of them). Their
collaborators have one job each: ``schema`` (tables, migrations), ``connections`` (per-thread
readers, the one writer connection and its transaction helper, background
WAL checkpoints), ``chunks`` (a request split into chunks, no SQL),
``writer`` (group commit, idempotent replacement, retention), ``ops`` (each
trace's operations and when their spans start, for search by operation and
window), ``reader`` and
``query`` (search, with one WHERE builder for traces and chunks), ``tags``
(Jaeger's tag semantics, shared with the server), ``values`` and ``wire``
(OTLP values and the protobuf wire walker).

Several processes (sidecars and one server) may share a file: WAL mode, a busy
timeout and ``BEGIN IMMEDIATE`` for writes.  Within one process a TraceStore may
be used from several threads; each thread gets its own connection for reads,
and every write goes through one writer connection (whose page cache then
stays warm).  WAL checkpoints run in a background thread, so no ingest waits
for one.
"""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING, Any

from gwtrace.home import gwtrace_home

__all__ = [
    "BUSY_TIMEOUT_MS", "CHECKPOINT_BYTES", "GLIDEIN_UUID_KEYS", "ReadBudget", "ReadList", "SCHEMA_VERSION",
    "SPAN_KIND_NAMES",
    "STATUS_ERROR", "STATUS_OK", "STATUS_UNSET", "StoreUnreadable", "TraceStore", "any_value_to_python",
    "attributes_to_dict", "create_store_file", "default_store_path", "normalize_trace_id", "scope_spans_slices", "span_to_dict",
    "tag_text",
]

#: What ``trace_store.py`` holds: loaded on first use (PEP 562), so that a package registering its parts
#: (``from gwtrace.store import parts``) or a command's ``--help`` does not load the store (~90 ms).
_LAZY = frozenset(__all__) - {"StoreUnreadable", "default_store_path"}

if TYPE_CHECKING:
    from .trace_store import (BUSY_TIMEOUT_MS, CHECKPOINT_BYTES, GLIDEIN_UUID_KEYS, SCHEMA_VERSION,  # noqa: F401
                              SPAN_KIND_NAMES, STATUS_ERROR, STATUS_OK, STATUS_UNSET, ReadBudget, ReadList,
                              TraceStore, any_value_to_python, attributes_to_dict, create_store_file,
                              normalize_trace_id, scope_spans_slices, span_to_dict, tag_text)


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import trace_store
    value = getattr(trace_store, name)
    globals()[name] = value
    return value


def default_store_path() -> pathlib.Path:
    """``${GWTRACE_HOME:-~/.local/share/gwtrace}/traces.db``."""
    return gwtrace_home() / "traces.db"


class StoreUnreadable(OSError):
    """The file is missing, not a gwtrace store, or damaged; the message says which, in one line."""


