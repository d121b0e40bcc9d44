"""The Jaeger HTTP query API subset that tools use, over the trace store.

``/api/*`` is Jaeger's (internal but widely used) UI API with its
``{data,total,limit,offset,errors}`` envelope; ``/api/v3/*`` is Jaeger's
stable OTLP-JSON API.  Same paths and shapes as Jaeger, so a script that reads
gwtrace reads Jaeger by changing the base URL.
"""

from __future__ import annotations

from typing import Any, Dict, List

from flask import Blueprint, Response, current_app, request
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, TracesData

from ..store import ReadBudget, ReadList, TraceStore, normalize_trace_id
from . import jaeger
from .jsonutil import gc_paused, json_response
from .otlp_json import message_to_json

bp = Blueprint("api", __name__)

#: Jaeger's default number of traces for a search.
DEFAULT_LIMIT = 100
#: A hard ceiling: a search returns whole traces.
MAX_LIMIT = 1500


def _store() -> TraceStore:
    return current_app.config["GWTRACE_STORE"]


def _bad_request(message: str) -> Response:
    return json_response(jaeger.error_envelope(400, message), 400)


@bp.route("/api/services")
def services() -> Response:
    return json_response(jaeger.envelope(_store().services()))


@bp.route("/api/services/<path:service>/operations")
def service_operations(service: str) -> Response:
    """Legacy form: operation names only."""
    names = sorted({name for name, _ in _store().operations(service)})
    return json_response(jaeger.envelope(names))


def _span_kind_param(value: str) -> Any:
    if not value:
        return None
    kind = jaeger.SPAN_KIND_BY_NAME.get(value.lower())
    if kind is None:
        raise jaeger.QueryError(f"unknown spanKind {value!r}; use one of {sorted(jaeger.SPAN_KIND_BY_NAME)}")
    return kind


@bp.route("/api/operations")
def operations() -> Response:
    service = request.args.get("service", "")
    if not service:
        return _bad_request("parameter 'service' is required")
    try:
        kind = _span_kind_param(request.args.get("spanKind", ""))
    except jaeger.QueryError as exc:
        return _bad_request(str(exc))
    data = [
        {"name": name, "spanKind": jaeger.SPAN_KIND_NAMES.get(k, "")}
        for name, k in _store().operations(service, kind)
    ]
    return json_response(jaeger.envelope(data))


@bp.route("/api/traces")
def find_traces() -> Response:
    store = _store()
    args = request.args
    trace_ids = args.getlist("traceID")
    budget = ReadBudget()   # one answer, however many traces it holds
    if trace_ids:
        data, errors = [], []
        with gc_paused():
            for tid in trace_ids:
                chunks = store.trace_chunks(tid, budget)
                if chunks:
                    data.append(_trace(chunks))
                elif chunks.cut:
                    errors.append({"code": 413, "msg": f"trace not read: {chunks.cut}", "traceID": tid})
                else:
                    errors.append({"code": 404, "msg": "trace not found", "traceID": tid})
            return json_response(jaeger.envelope(data, errors or None))
    service = args.get("service", "")
    if not service:
        return _bad_request("parameter 'service' is required")
    try:
        start = jaeger.parse_micros("start", args.get("start"))
        end = jaeger.parse_micros("end", args.get("end"))
        min_dur = jaeger.parse_duration(args["minDuration"], "minDuration") if args.get("minDuration") else None
        max_dur = jaeger.parse_duration(args["maxDuration"], "maxDuration") if args.get("maxDuration") else None
        if min_dur is not None and max_dur is not None and max_dur < min_dur:
            raise jaeger.QueryError("'maxDuration' should be greater than 'minDuration'")
        if start is not None and end is not None and end < start:
            raise jaeger.QueryError("'end' must not be before 'start'")
        tags = jaeger.parse_tags(args.getlist("tags"), args.getlist("tag"))
        limit = min(jaeger.parse_limit(args.get("limit"), DEFAULT_LIMIT), MAX_LIMIT)
        kind = _span_kind_param(args.get("spanKind", ""))
    except jaeger.QueryError as exc:
        return _bad_request(str(exc))
    found = store.find_traces(
        service=service,
        operation=args.get("operation") or None,
        span_kind=kind,
        tags=tags,
        start_ns=start,
        end_ns=end,
        min_duration_ns=min_dur,
        max_duration_ns=max_dur,
        limit=limit,
    )
    with gc_paused():
        data, errors = [], []
        for t in found:
            chunks = store.trace_chunks(t["trace_id"], budget)
            if chunks:
                data.append(_trace(chunks))
            elif chunks.cut:
                errors.append({"code": 413, "msg": f"trace not read: {chunks.cut}", "traceID": t["trace_id"]})
        return json_response(jaeger.envelope(data, errors or None))


def _trace(chunks: ReadList) -> Dict[str, Any]:
    """A Jaeger trace; one the answer could not hold whole says so in its ``warnings`` (Jaeger's place)."""
    trace = jaeger.trace_from_chunks(chunks)
    if chunks.cut:
        trace["warnings"] = [f"trace {chunks.cut}"]
    return trace


@bp.route("/api/traces/<trace_id>")
def get_trace(trace_id: str) -> Response:
    if normalize_trace_id(trace_id) is None:
        return json_response(jaeger.error_envelope(400, f"invalid trace id {trace_id!r}", trace_id), 400)
    with gc_paused():
        chunks = _store().trace_chunks(trace_id)
        if not chunks:
            if chunks.cut:
                return json_response(jaeger.error_envelope(413, f"trace not read: {chunks.cut}", trace_id), 413)
            return json_response(jaeger.error_envelope(404, "trace not found", trace_id), 404)
        return json_response(jaeger.envelope([_trace(chunks)]))


# ------------------------------------------------------------------ API v3


def _v3_error(http_code: int, grpc_code: int, message: str) -> Response:
    status = {400: "Bad Request", 404: "Not Found", 413: "Content Too Large"}.get(http_code, "Error")
    return json_response(
        {"error": {"grpcCode": grpc_code, "httpCode": http_code, "message": message, "httpStatus": status}},
        http_code,
    )


@bp.route("/api/v3/traces/<trace_id>")
def v3_get_trace(trace_id: str) -> Response:
    if normalize_trace_id(trace_id) is None:
        return _v3_error(400, 3, f"malformed trace id {trace_id!r}")
    parts = _store().get_trace_otlp(trace_id)
    if not parts:
        if parts.cut:
            return _v3_error(413, 8, f"trace not read: {parts.cut}")
        return _v3_error(404, 5, "trace not found")
    traces = TracesData()
    for resource, schema_url, scope_spans in parts:
        rs: ResourceSpans = traces.resource_spans.add()
        rs.resource.CopyFrom(resource)
        rs.schema_url = schema_url
        # Chunks of one scope arrive in several batches: one ScopeSpans per scope.
        merged: Dict[Any, Any] = {}
        for ss in scope_spans:
            key = (ss.scope.SerializeToString(), ss.schema_url)
            if key in merged:
                merged[key].spans.extend(ss.spans)
            else:
                merged[key] = rs.scope_spans.add()
                merged[key].CopyFrom(ss)
    answer: Dict[str, Any] = {"result": message_to_json(traces)}
    if parts.cut:
        answer["warnings"] = [f"trace {parts.cut}"]   # not Jaeger's: clients that do not know it ignore it
    return json_response(answer)


@bp.route("/api/v3/services")
def v3_services() -> Response:
    return json_response({"services": _store().services()})


@bp.route("/api/v3/operations")
def v3_operations() -> Response:
    service = request.args.get("service", "")
    if not service:
        return _v3_error(400, 3, "parameter 'service' is required")
    kind_name = request.args.get("span_kind", request.args.get("spanKind", ""))
    try:
        kind = _span_kind_param(kind_name)
    except jaeger.QueryError as exc:
        return _v3_error(400, 3, str(exc))
    ops: List[Dict[str, Any]] = [
        {"name": name, "spanKind": jaeger.SPAN_KIND_NAMES.get(k, "")} for name, k in _store().operations(service, kind)
    ]
    return json_response({"operations": ops})
