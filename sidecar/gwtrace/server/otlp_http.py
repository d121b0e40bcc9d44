"""OTLP/HTTP trace receiver: ``POST /v1/traces``.

Follows opentelemetry-proto ``docs/specification.md`` so that any OTLP
exporter can point at gwtrace and later at Jaeger or Tempo unchanged:

* ``application/x-protobuf`` and ``application/json`` on the same path; the
  answer uses the request's content type; anything else is 415.
* ``Content-Encoding: gzip`` (and ``deflate``, which the Python exporter
  offers); the *decompressed* size is capped as well as the wire size, and
  both caps answer 413, so a small gzip bomb cannot exhaust memory.
* A body that does not decode is 400 with a ``google.rpc.Status`` saying why;
  400 is not retried by exporters, which is right for a bad body.
* Spans the store rejects (bad ids, times) are reported as partial success:
  200 with ``rejected_spans`` and a message; the client must not retry it.
* A storage failure (disk full, lock time-out) is 503 with ``Retry-After``,
  which exporters do retry, so nothing is lost.
"""

from __future__ import annotations

import hmac
import logging
import sqlite3
import zlib
from http import HTTPStatus
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from flask import Blueprint, Response, current_app, request
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from ..store import TraceStore
from . import otlp_json
from .jsonutil import dumps

log = logging.getLogger("gwtrace.server")

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_PROTOBUF_TYPES = {PROTOBUF, "application/protobuf"}
_ENCODINGS = {"", "identity", "gzip", "x-gzip", "deflate"}

#: The OTLP specification's default cap on a decompressed request.
DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024

#: What a request without the right token is told.
TOKEN_MESSAGE = "missing or wrong bearer token (Authorization: Bearer <GWTRACE_SERVER_TOKEN>)"

bp = Blueprint("otlp", __name__)


class _Refused(Exception):
    def __init__(self, status: int, code: int, message: str, retry_after: Optional[int] = None):
        super().__init__(message)
        self.status, self.code, self.message, self.retry_after = status, code, message, retry_after


#: Headers every answer of the app carries (see app.security_headers).
_COMMON_HEADERS = [("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer")]

#: An answer as plain WSGI parts: status code, headers, body.
Answer = Tuple[int, List[Tuple[str, str]], bytes]


def _status_answer(status: int, code: int, message: str, as_json: bool, retry_after: Optional[int] = None) -> Answer:
    """A failure answer: ``google.rpc.Status`` in the request's encoding."""
    st = status_pb2.Status(code=code, message=message)
    if as_json:
        body, mimetype = dumps(json_format.MessageToDict(st)).encode(), JSON
    else:
        body, mimetype = st.SerializeToString(), PROTOBUF
    headers = [("Content-Type", mimetype)]
    if retry_after is not None:
        headers.append(("Retry-After", str(retry_after)))
    return status, headers, body


def _status_response(status: int, code: int, message: str, as_json: bool, retry_after: Optional[int] = None) -> Response:
    """The same failure answer as a Flask response (for the app's token check)."""
    status, headers, body = _status_answer(status, code, message, as_json, retry_after)
    return Response(body, status=status, headers=headers)


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


def _decompress(data: bytes, encoding: str, max_bytes: int) -> bytes:
    """Inflate gzip/zlib (and raw deflate) output, never beyond ``max_bytes``."""
    if encoding in ("", "identity"):
        return data
    # wbits 32+: accept a gzip or zlib header; raw deflate is tried after.
    for wbits in (zlib.MAX_WBITS | 32, -zlib.MAX_WBITS):
        out = bytearray()
        pending = data
        try:
            while pending:
                inflater = zlib.decompressobj(wbits)
                out += inflater.decompress(pending, max_bytes + 1 - len(out))
                if len(out) > max_bytes or inflater.unconsumed_tail:
                    raise _Refused(
                        413, code_pb2.RESOURCE_EXHAUSTED, f"decompressed body exceeds {max_bytes} bytes"
                    )
                if not inflater.eof:
                    raise zlib.error("compressed data is truncated")
                pending = inflater.unused_data  # concatenated gzip members
            return bytes(out)
        except zlib.error as exc:
            error = exc
            if encoding != "deflate":
                break
    raise _Refused(400, code_pb2.INVALID_ARGUMENT, f"cannot decompress {encoding} body: {error}")


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


def export(environ: Dict[str, Any], store: TraceStore, max_bytes: int) -> Answer:
    """Answer one ``POST /v1/traces`` from its WSGI environ."""
    mimetype = _mimetype(environ)
    if mimetype not in _PROTOBUF_TYPES and mimetype != JSON:
        text = f"415 unsupported media type {mimetype or '(none)'}; send {PROTOBUF} or {JSON}\n"
        return 415, [("Content-Type", "text/plain; charset=utf-8")], text.encode()
    as_json = mimetype == JSON
    encoding = environ.get("HTTP_CONTENT_ENCODING", "").strip().lower()
    try:
        if encoding not in _ENCODINGS:
            raise _Refused(415, code_pb2.INVALID_ARGUMENT, f"unsupported Content-Encoding {encoding!r}; use gzip")
        body = _decompress(_read_body(environ, max_bytes), encoding, max_bytes)
        req, rejected, problems = _decode(body, as_json)
        try:
            _, store_rejected, message = store.ingest(req, None if as_json else body)
        except sqlite3.OperationalError as exc:
            log.warning("store unavailable: %s", exc)
            raise _Refused(503, code_pb2.UNAVAILABLE, f"trace store busy or unavailable: {exc}", retry_after=5) from None
    except _Refused as refused:
        return _status_answer(refused.status, refused.code, refused.message, as_json, refused.retry_after)
    resp = ExportTraceServiceResponse()
    rejected += store_rejected
    if rejected:
        if message:
            problems.append(message)
        resp.partial_success.rejected_spans = rejected
        resp.partial_success.error_message = "; ".join(problems)
    if as_json:
        return 200, [("Content-Type", JSON)], dumps(json_format.MessageToDict(resp)).encode()
    return 200, [("Content-Type", PROTOBUF)], resp.SerializeToString()


class IngestMiddleware:
    """WSGI middleware that answers ``POST /v1/traces`` before Flask sees it.

    Why: ingest is the one hot path, and Flask's request and response
    machinery (context, routing, werkzeug's stream and Response objects) cost
    about as much per OTLP batch as decoding it.  Every other request, and
    anything this one does not take, goes to the app unchanged; the answers
    are the same as the app's, token check and common headers included.
    """

    def __init__(self, app: Callable[..., Iterable[bytes]], store: TraceStore, token: Optional[str], max_bytes: int):
        self.app, self.store, self.max_bytes = app, store, max_bytes
        self.expected = ("Bearer " + token).encode() if token else None

    def __call__(self, environ: Dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != "/v1/traces" or environ.get("REQUEST_METHOD") != "POST":
            return self.app(environ, start_response)
        extra: List[Tuple[str, str]] = []
        if self.expected is not None and not hmac.compare_digest(
            environ.get("HTTP_AUTHORIZATION", "").encode("latin-1"), self.expected
        ):
            status, headers, body = _status_answer(
                401, code_pb2.UNAUTHENTICATED, TOKEN_MESSAGE, _mimetype(environ) == JSON)
            extra.append(("WWW-Authenticate", 'Bearer realm="gwtrace"'))
        else:
            status, headers, body = export(environ, self.store, self.max_bytes)
        headers += [("Content-Length", str(len(body)))] + extra + _COMMON_HEADERS
        start_response(f"{status} {HTTPStatus(status).phrase}", headers)
        return [body]


@bp.route("/v1/traces", methods=["POST"])
def receive_traces() -> Response:
    """The same answer through Flask, for an app used without IngestMiddleware."""
    status, headers, body = export(
        request.environ, current_app.config["GWTRACE_STORE"], current_app.config["GWTRACE_MAX_BODY_BYTES"])
    return Response(body, status=status, headers=headers)
