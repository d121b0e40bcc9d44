"""The web UI: trace search, trace waterfall and glidein time line.

The HTML pages are static shells (no trace data in them): the browser code
fetches JSON from the APIs, so with a server token every byte of trace data
goes through the ``Authorization: Bearer`` check, and span names, attributes
and events only ever reach the page through ``textContent``.  Everything is
served from this package, nothing from a CDN, so the UI works air-gapped.
"""

from __future__ import annotations

import re
import time
from typing import Any, Dict, Optional, Tuple

from flask import Blueprint, Response, current_app, render_template, request
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from ..store import STATUS_ERROR, STATUS_OK, STATUS_UNSET, TraceStore
from ..store.values import attributes_to_dict, is_root
from . import jaeger
from .jsonutil import gc_paused, json_response
from ..analysis.critical_path import on_path, path_share, self_time_by_operation, self_times

bp = Blueprint("ui", __name__, template_folder="templates", static_folder="static", static_url_path="/static")

_STATUS_BY_NAME = {"error": STATUS_ERROR, "ok": STATUS_OK, "unset": STATUS_UNSET}
_STATUS_NAMES = {v: k for k, v in _STATUS_BY_NAME.items()}

#: Lanes of the glidein time line, in display order.
PHASES = ("glidein", "validation", "condor", "job", "other")
_PHASE_SYNONYMS = {
    "glidein": "glidein", "startup": "glidein", "pilot": "glidein",
    "validation": "validation", "validate": "validation", "setup": "validation", "script": "validation",
    "periodic": "validation",
    "condor": "condor", "htcondor": "condor", "startd": "condor",
    "job": "job", "user_job": "job", "userjob": "job", "payload": "job",
}
_JOB_WORDS = re.compile(r"(^|[^a-z])(job|payload)s?([^a-z]|$)")
# condor_startup.sh and the daemons it starts; not the setup scripts that merely
# mention condor (condor_platform_select.sh, collector_setup.sh run before it).
_CONDOR_WORDS = re.compile(
    r"condor_startup|(^|[^a-z_])(ht)?condor([^a-z_.]|$)|condor_(master|startd|starter|schedd|collector|procd|shared_port)"
)
_SCRIPT_SUFFIXES = (".sh", ".source", ".py", ".pl")


def phase_of(span: Dict[str, Any]) -> str:
    """Which lane of the glidein time line a span belongs to.

    An explicit ``glidein.phase`` (or ``gwtrace.phase``) attribute wins; else
    the span is classified by its name and attributes: the glidein's root
    span, user jobs (job wrapper, payload), HTCondor (condor_startup, the
    daemons) and validation/setup scripts (``*.sh`` files run by
    glidein_startup).
    """
    attrs = span["attributes"]
    for key in ("glidein.phase", "gwtrace.phase"):
        value = attrs.get(key)
        if isinstance(value, str) and value:
            return _PHASE_SYNONYMS.get(value.strip().lower(), "other")
    if not span["parent_span_id"]:
        return "glidein"
    name = span["name"].lower()
    executable = str(attrs.get("process.executable.name", "")).lower()
    words = f"{name} {executable}"
    if _JOB_WORDS.search(words) or any(k.startswith(("condor.job", "job.")) for k in attrs):
        return "job"
    if _CONDOR_WORDS.search(words):
        return "condor"
    if (
        name.endswith(_SCRIPT_SUFFIXES)
        or executable.endswith(_SCRIPT_SUFFIXES)
        or "valid" in name
        or "script" in name
        or "setup" in name
    ):
        return "validation"
    return "other"


def _store() -> TraceStore:
    return current_app.config["GWTRACE_STORE"]


# ---------------------------------------------------------------- pages


@bp.route("/")
def search_page() -> str:
    return render_template("search.html", page="search")


@bp.route("/trace/<trace_id>")
def trace_page(trace_id: str) -> str:
    return render_template("trace.html", page="trace")


@bp.route("/glidein/<path:uuid>")
def glidein_page(uuid: str) -> str:
    return render_template("glidein.html", page="glidein")


# ------------------------------------------------------------ UI data


def _bad(message: str) -> Response:
    return json_response({"error": message}, 400)


@bp.route("/ui/api/filters")
def filters() -> Response:
    store = _store()
    return json_response({
        "services": store.services(),
        "sites": store.resource_attribute_values("glidein.site"),
        "entries": store.resource_attribute_values("glidein.entry"),
    })


def _summary_json(t: Dict[str, Any]) -> Dict[str, Any]:
    return {
        "traceID": t["trace_id"],
        "rootName": t["root_name"],
        "rootService": t["root_service"],
        "services": t["services"],
        "startTime": t["start_ns"] // 1000,
        "duration": (t["end_ns"] - t["start_ns"]) // 1000,
        "spanCount": t["span_count"],
        "errorCount": t["error_count"],
        "status": _STATUS_NAMES.get(t["status_code"], "unset"),
        "glidein": t.get("glidein_uuid"),
        "site": t.get("site"),
        "entry": t.get("entry"),
    }


@bp.route("/ui/api/search")
def search() -> Response:
    args = request.args
    resource_attrs = {}
    if args.get("site"):
        resource_attrs["glidein.site"] = args["site"]
    if args.get("entry"):
        resource_attrs["glidein.entry"] = args["entry"]
    status: Optional[int] = None
    if args.get("status"):
        status = _STATUS_BY_NAME.get(args["status"].lower())
        if status is None:
            return _bad("status must be one of error, ok, unset")
    try:
        min_duration = jaeger.parse_duration(args["minDuration"], "minDuration") if args.get("minDuration") else None
        start = jaeger.parse_micros("start", args.get("start"))
        end = jaeger.parse_micros("end", args.get("end"))
        if args.get("lookback"):
            start = max(0, time.time_ns() - jaeger.parse_duration(args["lookback"], "lookback"))
        limit = min(jaeger.parse_limit(args.get("limit"), 20), 1000)
    except jaeger.QueryError as exc:
        return _bad(str(exc))
    found = _store().find_traces(
        service=args.get("service") or None,
        resource_attrs=resource_attrs or None,
        status=status,
        min_trace_duration_ns=min_duration,
        start_ns=start,
        end_ns=end,
        limit=limit,
    )
    own = _store().glidein_statuses([bytes.fromhex(t["trace_id"]) for t in found])
    return json_response({"traces": [_with_glidein(_summary_json(t), own.get(t["trace_id"])) for t in found],
                          "limit": limit})


def _with_glidein(summary: Dict[str, Any], own: Optional[Tuple[Any, Any]]) -> Dict[str, Any]:
    """The glidein's own outcome beside the trace's status: a trace is "error" when any span failed, a user
    job that exited 137 included; the glidein itself may have done its work. ``glideinStatus``: ok, error
    (the glidein failed: ``failedScript`` says where when known) or None (not a glidein's trace, or no record)."""
    if own is None:
        summary["glideinStatus"] = None
        return summary
    status, script = own
    summary["glideinStatus"] = {"OK": "ok", "ERROR": "error"}.get(status)
    summary["failedScript"] = script
    return summary


@bp.route("/ui/api/critical/<trace_id>")
def critical(trace_id: str) -> Response:
    """The trace's critical path and each span's self-time (``analysis.critical_path``), for the trace page."""
    try:
        spans = _store().get_trace(trace_id)
    except ValueError as exc:
        return _bad(str(exc))
    if not spans:
        return json_response({"error": f"no trace {trace_id}" + (f" read: {spans.cut}" if spans.cut else "")},
                             413 if spans.cut else 404)
    return json_response({
        "warnings": [f"trace {spans.cut}"] if spans.cut else None,
        "onPath": sorted(on_path(spans)),
        "share": {k: v // 1000 for k, v in path_share(spans).items()},
        "selfTime": {k: v // 1000 for k, v in self_times(spans).items()},
        "byOperation": [[name, value // 1000, count] for name, value, count in self_time_by_operation(spans)],
    })


@bp.route("/ui/api/resources/<trace_id>")
def resources(trace_id: str) -> Response:
    """What the trace's jobs (their spans' trace) and glideins (``?glidein=UUID``, up to 5) used, for the chart
    under the waterfall (``analysis.resources.charts``; times in µs since the epoch, as the Jaeger API's)."""
    from ..analysis.resources import charts

    if not re.fullmatch(r"[0-9a-fA-F]{32}", trace_id):
        return _bad(f"not a trace id: {trace_id[:64]!r}")
    glideins = [g[:256] for g in request.args.getlist("glidein")[:5] if g]
    return json_response({"subjects": charts(_store(), trace_id=trace_id.lower(), glideins=glideins)})


@bp.route("/ui/api/glideins")
def glideins() -> Response:
    try:
        limit = min(jaeger.parse_limit(request.args.get("limit"), 20), 1000)
    except jaeger.QueryError as exc:
        return _bad(str(exc))
    rows = _store().glideins(limit)
    return json_response({
        "glideins": [
            {"uuid": g["uuid"], "service": g["service"], "site": g["site"], "entry": g["entry"],
             "startTime": g["start_ns"] // 1000, "duration": (g["end_ns"] - g["start_ns"]) // 1000}
            for g in rows
        ]
    })


@bp.route("/ui/api/glidein/<path:uuid>")
def glidein(uuid: str) -> Response:
    with gc_paused():
        return _glidein(uuid)


def _glidein(uuid: str) -> Response:
    chunks = _store().glidein_chunks(uuid)
    if not chunks:
        if chunks.cut:
            return json_response({"error": f"glidein {uuid} not read: {chunks.cut}"}, 413)
        return json_response({"error": f"no spans for glidein {uuid}"}, 404)
    spans = jaeger.spans_from_chunks(chunks, _lane)
    resources = {(resource_id, service): resource for resource_id, service, resource, _ in chunks}
    first = spans[0][3]
    return json_response({
        "uuid": uuid,
        "service": first[1],
        "resource": [jaeger.tag(k, v) for k, v in resources[first].items()],
        "phases": list(PHASES),
        "spans": [row[2] for row in spans],
        "warnings": [f"glidein's spans {chunks.cut}"] if chunks.cut else None,
    })


def _lane(s: Span, service: str, out: Dict[str, Any]) -> None:
    """The time line's extra fields: one process for the whole glidein, and the span's lane."""
    out["processID"] = "p1"
    out["phase"] = phase_of({
        "name": s.name,
        "parent_span_id": "" if is_root(s.parent_span_id) else s.parent_span_id.hex(),
        "attributes": attributes_to_dict(s.attributes),
    })
    out["serviceName"] = service
