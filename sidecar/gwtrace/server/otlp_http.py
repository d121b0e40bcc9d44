"""OTLP/HTTP trace receiver: ``POST /v1/traces``.

Follows opentelemetry-proto ``docs/specification.md`` so that any OTLP
exporter can point at gwtrace and later at Jaeger or Tempo unchanged:

* ``application/x-protobuf`` and ``application/json`` on the same path; the
  answer uses the request's content type; anything else is 415.
* ``Content-Encoding: gzip`` (and ``deflate``, which the Python exporter
  offers); the *decompressed* size is capped as well as the wire size, and
  both caps answer 413, so a small gzip bomb cannot exhaust memory.
* Before a body is decoded, what decoding it would cost is bounded from its
  bytes (``store.limits.decode_cost``, ``json_cost``, the JSON nesting):
  over the limit is 413, and requests in flight share a budget
  (``budget.DecodeBudget``): one that does not fit is 503 with
  ``Retry-After``.  What is decoded is cut to the span limits by the store
  (``store.limits.enforce``); a cut is reported as a partial-success warning
  with ``rejected_spans`` 0.
* A body that does not decode is 400 with a ``google.rpc.Status`` saying why;
  400 is not retried by exporters, which is right for a bad body.
* Spans the store rejects (bad ids, times) are reported as partial success:
  200 with ``rejected_spans`` and a message; the client must not retry it.
* A storage failure (disk full, lock time-out, a damaged file) is 503 with
  ``Retry-After``, which exporters do retry, so nothing is lost.
"""

from __future__ import annotations

import logging
import sqlite3
import zlib
from contextlib import contextmanager
from http import HTTPStatus
from typing import Any, Callable, Dict, Iterable, Iterator, Optional, Tuple

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from google.rpc import code_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from ..store import TraceStore, limits
from . import otlp_json
from .answers import JSON, RETRY_AFTER_SECONDS, PROTOBUF, Answer, envelope_answer, rpc_status_answer
from .auth import BearerAuth, common_headers
from .budget import BudgetExhausted, DecodeBudget
from .jsonutil import dumps

log = logging.getLogger("gwtrace.server")

_PROTOBUF_TYPES = {PROTOBUF, "application/protobuf"}
_ENCODINGS = {"", "identity", "gzip", "x-gzip", "deflate"}

#: The cap on a request body, on the wire and decompressed: 16 times a 4,096-span gwtrace block, far
#: above an SDK batch (512 spans, ~120 KB); what decoding a body may cost is bounded apart
#: (``store.limits.MAX_DECODE_COST``).
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
#: Retry-After of a 503 for a full decode budget: room comes back as soon as a request is stored.
BUSY_RETRY_AFTER_SECONDS = 2

#: The one path this module answers.
PATH = "/v1/traces"


class _Refused(Exception):
    def __init__(self, status: int, code: int, message: str, retry_after: Optional[int] = None):
        super().__init__(message)
        self.status, self.code, self.message, self.retry_after = status, code, message, retry_after


def _mimetype(environ: Dict[str, Any]) -> str:
    """The request's media type without parameters, lower case (as Flask's ``request.mimetype``)."""
    return environ.get("CONTENT_TYPE", "").split(";", 1)[0].strip().lower()


def _read_body(environ: Dict[str, Any], max_bytes: int) -> bytes:
    try:
        length: Optional[int] = int(environ.get("CONTENT_LENGTH") or "")
    except ValueError:
        length = None
    if length is not None and length > max_bytes:
        raise _Refused(413, code_pb2.RESOURCE_EXHAUSTED, f"request body of {length} bytes exceeds {max_bytes}")
    stream = environ["wsgi.input"]
    if length is not None:
        data = stream.read(length)
    elif environ.get("wsgi.input_terminated"):  # chunked: the server ends the stream
        data = stream.read(max_bytes + 1)
    else:
        data = b""  # no length and no end: nothing can be read safely (as werkzeug does)
    if len(data) > max_bytes:
        raise _Refused(413, code_pb2.RESOURCE_EXHAUSTED, f"request body exceeds {max_bytes} bytes")
    return data


def read_request(environ: Dict[str, Any], max_bytes: int) -> bytes:
    """The request's body, inflated, never beyond ``max_bytes``: ``/v1/traces`` and the snapshots read it so."""
    encoding = environ.get("HTTP_CONTENT_ENCODING", "").strip().lower()
    if encoding not in _ENCODINGS:
        raise _Refused(415, code_pb2.INVALID_ARGUMENT, f"unsupported Content-Encoding {encoding!r}; use gzip")
    return _decompress(_read_body(environ, max_bytes), encoding, max_bytes)


def _decompress(data: bytes, encoding: str, max_bytes: int) -> bytes:
    """Inflate gzip/zlib (and raw deflate) output, never beyond ``max_bytes``."""
    if encoding in ("", "identity"):
        return data
    # wbits 32+: accept a gzip or zlib header; raw deflate is tried after.
    for wbits in (zlib.MAX_WBITS | 32, -zlib.MAX_WBITS):
        parts = []
        size = 0
        pending = data
        try:
            while pending:
                inflater = zlib.decompressobj(wbits)
                part = inflater.decompress(pending, max_bytes + 1 - size)
                size += len(part)
                if size > max_bytes or inflater.unconsumed_tail:
                    raise _Refused(
                        413, code_pb2.RESOURCE_EXHAUSTED, f"decompressed body exceeds {max_bytes} bytes"
                    )
                if not inflater.eof:
                    raise zlib.error("compressed data is truncated")
                parts.append(part)
                pending = inflater.unused_data  # concatenated gzip members
            return parts[0] if len(parts) == 1 else b"".join(parts)  # one member: no copy
        except zlib.error as exc:
            error = exc
            if encoding != "deflate":
                break
    raise _Refused(400, code_pb2.INVALID_ARGUMENT, f"cannot decompress {encoding} body: {error}")


def decode_cost(body: bytes, as_json: bool) -> int:
    """What decoding ``body`` may take, in bytes; refused (413, 400 for JSON nested too deep) over the limits."""
    if as_json:
        problem = limits.json_depth_problem(body)
        if problem is not None:
            raise _Refused(400, code_pb2.INVALID_ARGUMENT, f"body is not OTLP/JSON: {problem}")
    cost = limits.json_cost(body) if as_json else limits.decode_cost(body)
    most = limits.MAX_JSON_DECODE_COST if as_json else limits.MAX_DECODE_COST
    if cost > most:
        raise _Refused(413, code_pb2.RESOURCE_EXHAUSTED,
                       f"request would take ~{cost >> 20} MiB to decode (limit {most >> 20} MiB): "
                       "it holds too many small items; send fewer spans per request")
    return cost


@contextmanager
def decoding(budget: DecodeBudget, cost: int) -> Iterator[None]:
    """Hold ``cost`` of the budget while a request is decoded and stored; 503 when there is no room."""
    try:
        with budget.hold(cost):
            yield
    except BudgetExhausted as exc:
        raise _Refused(503, code_pb2.UNAVAILABLE, f"server busy decoding other requests ({exc}); retry later",
                       retry_after=BUSY_RETRY_AFTER_SECONDS) from None


def _decode(body: bytes, as_json: bool) -> Tuple[ExportTraceServiceRequest, int, list]:
    if as_json:
        try:
            return otlp_json.parse_request(body)
        except otlp_json.OtlpJsonError as exc:
            raise _Refused(400, code_pb2.INVALID_ARGUMENT, str(exc)) from None
    req = ExportTraceServiceRequest()
    try:
        req.ParseFromString(body)
    except DecodeError as exc:
        raise _Refused(400, code_pb2.INVALID_ARGUMENT, f"body is not an OTLP ExportTraceServiceRequest: {exc}") from None
    return req, 0, []


@contextmanager
def storing(what: str) -> Iterator[None]:
    """Map the store's refusals to answers: over its bounds is 413; busy or damaged is 503 with Retry-After."""
    try:
        yield
    except limits.TooLarge as exc:
        raise _Refused(413, code_pb2.RESOURCE_EXHAUSTED, str(exc)) from None
    except sqlite3.DatabaseError as exc:  # locked, disk full, damaged file: retry later
        log.warning("store unavailable%s: %s", f" for {what}" if what else "", exc)
        raise _Refused(503, code_pb2.UNAVAILABLE, f"trace store busy or unavailable: {exc}",
                       retry_after=RETRY_AFTER_SECONDS) from None


def receive_export(environ: Dict[str, Any], max_bytes: int, budget: DecodeBudget,
                   handle: Callable[[bytes, bool], Message]) -> Answer:
    """Answer one OTLP export request: ``/v1/traces`` and ``/v1/metrics`` are received by this one path.

    Why one path: the media type (415), the body and its caps (413), the decode bound and budget
    (413, 503), a refusal as a ``google.rpc.Status`` and the answer in the request's content type
    must not drift apart between signals.  ``handle(body, as_json)`` decodes and stores the body
    (its store call inside ``storing``) and gives the export response; it may raise ``_Refused``.
    """
    mimetype = _mimetype(environ)
    if mimetype not in _PROTOBUF_TYPES and mimetype != JSON:
        text = f"415 unsupported media type {mimetype or '(none)'}; send {PROTOBUF} or {JSON}\n"
        return 415, [("Content-Type", "text/plain; charset=utf-8")], text.encode()
    as_json = mimetype == JSON
    try:
        body = read_request(environ, max_bytes)
        with decoding(budget, decode_cost(body, as_json)):
            resp = handle(body, as_json)
    except _Refused as refused:
        return rpc_status_answer(refused.status, refused.code, refused.message, as_json, refused.retry_after)
    if as_json:
        return 200, [("Content-Type", JSON)], dumps(json_format.MessageToDict(resp)).encode()
    return 200, [("Content-Type", PROTOBUF)], resp.SerializeToString()


def _store_traces(store: TraceStore, body: bytes, as_json: bool) -> ExportTraceServiceResponse:
    req, rejected, problems = _decode(body, as_json)
    with storing(""):
        _, store_rejected, message = store.ingest(req, None if as_json else body)
    del req
    resp = ExportTraceServiceResponse()
    rejected += store_rejected
    if message:
        problems.append(message)
    if rejected or message:  # a cut without rejection is a warning: rejected_spans 0 and a message
        resp.partial_success.rejected_spans = rejected
        resp.partial_success.error_message = "; ".join(problems)
    return resp


def export(environ: Dict[str, Any], store: TraceStore, max_bytes: int, budget: DecodeBudget) -> Answer:
    """Answer one ``POST /v1/traces`` from its WSGI environ."""
    return receive_export(environ, max_bytes, budget, lambda body, as_json: _store_traces(store, body, as_json))


class IngestMiddleware:
    """WSGI middleware that answers ``/v1/traces`` before Flask sees it.

    Why: ingest is the one hot path, and Flask's request and response
    machinery (context, routing, werkzeug's stream and Response objects) cost
    about as much per OTLP batch as decoding it.  Every other path goes to
    the app unchanged; the answers here are the app's (token check, common
    headers and a 405 for other methods included), built by the same code.
    Another POST-only path answered so (``snapshot_http``) names its ``path`` and ``receive``.
    """

    path = PATH
    receive = staticmethod(export)

    def __init__(self, app: Callable[..., Iterable[bytes]], store: TraceStore, auth: BearerAuth, max_bytes: int,
                 budget: DecodeBudget):
        self.app, self.store, self.auth, self.max_bytes, self.budget = app, store, auth, max_bytes, budget

    def __call__(self, environ: Dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != self.path:
            return self.app(environ, start_response)
        status, headers, body = self.answer(environ)
        headers += [("Content-Length", str(len(body)))] + common_headers("")
        start_response(f"{status} {HTTPStatus(status).phrase}", headers)
        return [body]

    def answer(self, environ: Dict[str, Any]) -> Answer:
        if not self.auth.allows(environ.get("HTTP_AUTHORIZATION", "")):
            return self.auth.refusal(self.path, _mimetype(environ))
        method = environ.get("REQUEST_METHOD", "")
        if method != "POST":
            status, headers, body = envelope_answer(405, f"{method} not allowed on {self.path}")
            return status, headers + [("Allow", "POST")], body
        return self.receive(environ, self.store, self.max_bytes, self.budget)
