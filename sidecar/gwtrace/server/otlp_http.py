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

import logging
import sqlite3
import zlib
from typing import Optional, Tuple

from flask import Blueprint, Response, current_app, request
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from . import otlp_json
from .jsonutil import dumps

log = logging.getLogger("gwtrace.server")

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_PROTOBUF_TYPES = {PROTOBUF, "application/protobuf"}
_ENCODINGS = {"", "identity", "gzip", "x-gzip", "deflate"}

#: The OTLP specification's default cap on a decompressed request.
DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024

bp = Blueprint("otlp", __name__)


class _Refused(Exception):
    def __init__(self, status: int, code: int, message: str, retry_after: Optional[int] = None):
        super().__init__(message)
        self.status, self.code, self.message, self.retry_after = status, code, message, retry_after


def _status_response(status: int, code: int, message: str, as_json: bool, retry_after: Optional[int] = None) -> Response:
    """A failure answer: ``google.rpc.Status`` in the request's encoding."""
    st = status_pb2.Status(code=code, message=message)
    if as_json:
        resp = Response(dumps(json_format.MessageToDict(st)), status=status, mimetype=JSON)
    else:
        resp = Response(st.SerializeToString(), status=status, mimetype=PROTOBUF)
    if retry_after is not None:
        resp.headers["Retry-After"] = str(retry_after)
    return resp


def _read_body(max_bytes: int) -> bytes:
    length = request.content_length
    if length is not None and length > max_bytes:
        raise _Refused(413, code_pb2.RESOURCE_EXHAUSTED, f"request body of {length} bytes exceeds {max_bytes}")
    data = request.stream.read(max_bytes + 1)
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


@bp.route("/v1/traces", methods=["POST"])
def receive_traces() -> Response:
    mimetype = (request.mimetype or "").lower()
    if mimetype not in _PROTOBUF_TYPES and mimetype != JSON:
        return Response(
            f"415 unsupported media type {mimetype or '(none)'}; send {PROTOBUF} or {JSON}\n",
            status=415,
            mimetype="text/plain",
        )
    as_json = mimetype == JSON
    encoding = request.headers.get("Content-Encoding", "").strip().lower()
    try:
        if encoding not in _ENCODINGS:
            raise _Refused(415, code_pb2.INVALID_ARGUMENT, f"unsupported Content-Encoding {encoding!r}; use gzip")
        max_bytes = current_app.config["GWTRACE_MAX_BODY_BYTES"]
        body = _decompress(_read_body(max_bytes), encoding, max_bytes)
        req, rejected, problems = _decode(body, as_json)
        store = current_app.config["GWTRACE_STORE"]
        try:
            _, store_rejected, message = store.ingest(req, None if as_json else body)
        except sqlite3.OperationalError as exc:
            log.warning("store unavailable: %s", exc)
            raise _Refused(503, code_pb2.UNAVAILABLE, f"trace store busy or unavailable: {exc}", retry_after=5) from None
    except _Refused as refused:
        return _status_response(refused.status, refused.code, refused.message, as_json, refused.retry_after)
    resp = ExportTraceServiceResponse()
    rejected += store_rejected
    if rejected:
        if message:
            problems.append(message)
        resp.partial_success.rejected_spans = rejected
        resp.partial_success.error_message = "; ".join(problems)
    if as_json:
        return Response(dumps(json_format.MessageToDict(resp)), status=200, mimetype=JSON)
    return Response(resp.SerializeToString(), status=200, mimetype=PROTOBUF)
