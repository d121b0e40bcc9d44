"""Glidein records from a Jaeger query API: for traces kept in Jaeger (or behind Tempo's Jaeger API).

``--source jaeger=URL`` asks ``URL/api/traces`` for the ``glidein`` service's
traces, turns each one into the span dicts the store gives (``from_trace``
reads those) and makes the records from them, so the analysis is the same
code whether traces live in the embedded store or in Jaeger. ``gwtrace serve``
speaks the same API, which is how this is tested (over real HTTP, against the
store's own answers).

The fetch is bounded and paged: the Jaeger API has a result limit and no
offset, so the period is cut into time windows, and a window that comes back
full is halved and asked again, down to a minute; a minute still full is
taken as it is and counted, never silently cut. An answer ``gwtrace serve`` had
to cut (more than one answer may read: traces left out as errors with code
413, or a trace with ``warnings``) counts as full.
"""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from gwtrace.factory.from_trace import record_from_trace
from gwtrace.wire.redact import strip_userinfo
from .summary import STARTED, summarize

PAGE = 500            # traces per request
MIN_WINDOW_US = 60_000_000
TIMEOUT = 60
SERVICE = "glidein"
ROOT = "glidein"      # the glidein's root span: windows are matched on its start, so halving a window halves its traces


class JaegerError(OSError):
    """The query API could not be read; the message says where and why, in one line."""


def _tags(tags: List[Dict[str, Any]]) -> Dict[str, Any]:
    return {t["key"]: t.get("value") for t in tags or []}


def spans_of(trace: Dict[str, Any]) -> List[Dict[str, Any]]:
    """A Jaeger trace's spans as the store's span dicts (the fields ``from_trace`` reads)."""
    resources: Dict[Any, Dict[str, Any]] = {}   # one per process, shared by its spans (nothing edits them)
    for pid, process in (trace.get("processes") or {}).items():
        resources[pid] = _tags(process.get("tags"))
        resources[pid].setdefault("service.name", process.get("serviceName"))
    out = []
    for span in trace.get("spans") or []:
        resource = resources.get(span.get("processID"))
        if resource is None:
            resource = resources[span.get("processID")] = {"service.name": None}
        attrs = _tags(span.get("tags"))
        status = {"ERROR": 2, "OK": 1}.get(str(attrs.pop("otel.status_code", "")), 0)
        message = str(attrs.pop("otel.status_description", "") or "")
        if attrs.pop("error", False) is True:
            status = 2
        parent = next((r["spanID"] for r in span.get("references") or []
                       if r.get("refType") == "CHILD_OF" and r.get("traceID") == span.get("traceID")), "")
        start = int(span["startTime"]) * 1000
        out.append({"trace_id": span.get("traceID"), "span_id": span["spanID"], "parent_span_id": parent,
                    "name": span.get("operationName", ""), "start_ns": start,
                    "end_ns": start + int(span.get("duration", 0)) * 1000, "status_code": status,
                    "status_message": message, "attributes": attrs, "resource": resource})
    return out


def _get(base: str, params: List[Tuple[str, str]]) -> Dict[str, Any]:
    url = f"{base.rstrip('/')}/api/traces?{urllib.parse.urlencode(params)}"
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as resp:
            return json.load(resp)
    except (OSError, ValueError) as exc:
        raise JaegerError(strip_userinfo(f"cannot read the Jaeger query API at {base}: {exc}")) from None


def fetch_traces(base: str, start_us: int, end_us: int, page: int = PAGE) -> Iterator[Dict[str, Any]]:
    """Every ``glidein`` trace whose root starts in [start_us, end_us], window by window (each trace once).

    The query names the root's operation: Jaeger then matches the window on that
    span's start (without it, a trace matches every window its spans reach into,
    so a busy period of long glideins never fits a page however small the window).
    """
    seen = set()
    windows = [(start_us, end_us)]
    while windows:
        lo, hi = windows.pop()
        body = _get(base, [("service", SERVICE), ("operation", ROOT), ("start", str(lo)), ("end", str(hi)),
                           ("limit", str(page))])
        data = body.get("data") or []
        if (len(data) >= page or _cut(body)) and hi - lo > MIN_WINDOW_US:
            windows.extend(reversed(_split(lo, hi, data, page)))   # full: ask again in smaller windows
            continue
        for trace in data:
            if trace.get("traceID") not in seen:
                seen.add(trace.get("traceID"))
                yield trace


def _cut(body: Dict[str, Any]) -> bool:
    """Whether the answer was cut to what one answer may read (``gwtrace serve``: traces left out are errors
    with code 413, a trace cut short has ``warnings``): as good as full, so the window is asked again smaller."""
    return (any(e.get("code") == 413 for e in body.get("errors") or [])
            or any(t.get("warnings") for t in body.get("data") or []))


def _root_start(trace: Dict[str, Any]) -> Optional[int]:
    return min((int(s["startTime"]) for s in trace.get("spans") or [] if s.get("operationName") == ROOT),
               default=None)


def _split(lo: int, hi: int, full: List[Dict[str, Any]], page: int) -> List[Tuple[int, int]]:
    """Windows of [lo, hi] each expected to hold about half a page, from the density a full page shows.

    A full page is thrown away, so halving alone would fetch every trace again at each level above the
    one that fits (2-3x the traffic for 10 000 glideins); the page's own root starts tell how dense the
    period is. At least two windows, none below a minute (a minute still full is taken as it is).
    """
    starts = sorted(t for t in (_root_start(trace) for trace in full) if t is not None)
    spread = starts[-1] - starts[0] if len(starts) > 1 else 0
    width = max(MIN_WINDOW_US, spread // 2) if spread else (hi - lo) // 2
    parts = max(2, min(-(-(hi - lo) // max(width, 1)), 10_000))
    step = (hi - lo) // parts
    edges = [lo + i * step for i in range(parts)] + [hi + 1]
    return [(edges[i], edges[i + 1] - 1) for i in range(parts)]


def _period(since: Optional[int], until: Optional[int]) -> Tuple[int, int]:
    """The fetch window in microseconds (default: the last 30 days)."""
    end_us = (until if until is not None else int(time.time()) + 86400) * 1_000_000
    start_us = (since if since is not None else end_us // 1_000_000 - 30 * 86400) * 1_000_000
    return start_us, end_us


def _records(base: str, since: Optional[int], until: Optional[int]) -> Iterator[Tuple[Tuple[Any, ...], Any, str]]:
    """(identity key, GlideinRecord, trace id) for each glidein trace, page by page."""
    for trace in fetch_traces(base, *_period(since, until)):
        rec = record_from_trace(spans_of(trace))
        if rec is not None:
            key = (rec.factory, rec.schedd, rec.cluster, rec.proc, rec.glidein_uuid) if rec.cluster is not None \
                else (trace.get("traceID"),)
            yield key, rec, trace.get("traceID")


def load_from_jaeger(base: str, since: Optional[int], until: Optional[int]) -> List[Dict[str, Any]]:
    """The records of the glideins whose traces start in the period (default: the last 30 days)."""
    records: Dict[Tuple[Any, ...], Dict[str, Any]] = {}
    for key, rec, trace_id in _records(base, since, until):
        data = rec.to_dict()
        data["trace_id"] = trace_id
        records[key] = data
    return sorted(records.values(), key=lambda r: (r.get("started") or 0, r.get("cluster") or 0))


def summaries_from_jaeger(base: str, since: Optional[int], until: Optional[int],
                          keep: Callable[[Dict[str, Any]], bool]) -> List[List[Any]]:
    """The analysis summaries of the same glideins, in the same order, without holding their records:
    each record is summarised as its trace arrives (a record is ~50x its summary in memory)."""
    found: Dict[Tuple[Any, ...], List[Any]] = {}
    for key, rec, trace_id in _records(base, since, until):
        data = rec.to_dict()
        data["trace_id"] = trace_id
        if keep(data):
            found[key] = summarize(data)
        else:
            found.pop(key, None)
    return sorted(found.values(), key=lambda s: (s[STARTED] or 0, s[1][0] or 0))
