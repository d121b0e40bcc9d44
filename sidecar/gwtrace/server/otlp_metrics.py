"""OTLP/HTTP metrics receiver: ``POST /v1/metrics``, the sidecars' resource samples (docs/resources.md).

The same answers as ``/v1/traces`` (``otlp_http``), by the same code: bearer
token, protobuf or JSON with the answer in the request's content type, gzip,
the wire and decompressed size caps (413), the decode cost bound and the shared
decode budget (413, 503 with Retry-After), 400 with a ``google.rpc.Status``
for a body that does not decode, 503 with Retry-After when the store is busy.
What the store does not keep (non-finite values, long names, histograms, over
the per-subject bounds: ``store.metrics``) is a partial success:
``rejected_data_points`` and a message, which the client must not retry.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from typing import Any, Dict

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from google.rpc import code_pb2
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)

from ..store import TraceStore, limits
from .answers import JSON, PROTOBUF, RETRY_AFTER_SECONDS, Answer, rpc_status_answer
from .budget import DecodeBudget
from .jsonutil import dumps
from .otlp_http import _PROTOBUF_TYPES, IngestMiddleware, _mimetype, _Refused, decode_cost, decoding, read_request

log = logging.getLogger("gwtrace.server")

PATH = "/v1/metrics"


def _drop_exemplars(obj: Any) -> None:
    """Exemplars carry hex ids (OTLP/JSON) the protobuf mapping reads as base64; they are not kept anyway."""
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            item.pop("exemplars", None)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _decode(body: bytes, as_json: bool) -> ExportMetricsServiceRequest:
    req = ExportMetricsServiceRequest()
    if as_json:
        try:
            document = json.loads(body)
            if not isinstance(document, dict):
                raise ValueError("the document is not an object")
            _drop_exemplars(document)
            json_format.ParseDict(document, req, ignore_unknown_fields=True)
        except (ValueError, json_format.ParseError, RecursionError) as exc:
            raise _Refused(400, code_pb2.INVALID_ARGUMENT, f"body is not OTLP/JSON metrics: {exc}") from None
        return req
    try:
        req.ParseFromString(body)
    except DecodeError as exc:
        raise _Refused(400, code_pb2.INVALID_ARGUMENT,
                       f"body is not an OTLP ExportMetricsServiceRequest: {exc}") from None
    return req


def receive(environ: Dict[str, Any], store: TraceStore, max_bytes: int, budget: DecodeBudget) -> Answer:
    """Answer one ``POST /v1/metrics``."""
    mimetype = _mimetype(environ)
    if mimetype not in _PROTOBUF_TYPES and mimetype != JSON:
        text = f"415 unsupported media type {mimetype or '(none)'}; send {PROTOBUF} or {JSON}\n"
        return 415, [("Content-Type", "text/plain; charset=utf-8")], text.encode()
    as_json = mimetype == JSON
    try:
        body = read_request(environ, max_bytes)
        with decoding(budget, decode_cost(body, as_json)):
            req = _decode(body, as_json)
            try:
                result = store.put_metrics_result(req)
            except limits.TooLarge as exc:
                raise _Refused(413, code_pb2.RESOURCE_EXHAUSTED, str(exc)) from None
            except sqlite3.DatabaseError as exc:
                log.warning("store unavailable for metrics: %s", exc)
                raise _Refused(503, code_pb2.UNAVAILABLE, f"trace store busy or unavailable: {exc}",
                               retry_after=RETRY_AFTER_SECONDS) from None
    except _Refused as refused:
        return rpc_status_answer(refused.status, refused.code, refused.message, as_json, refused.retry_after)
    resp = ExportMetricsServiceResponse()
    if result.rejected:
        resp.partial_success.rejected_data_points = result.rejected
        resp.partial_success.error_message = result.message
    if as_json:
        return 200, [("Content-Type", JSON)], dumps(json_format.MessageToDict(resp)).encode()
    return 200, [("Content-Type", PROTOBUF)], resp.SerializeToString()


class MetricsMiddleware(IngestMiddleware):
    """Answers ``/v1/metrics`` before Flask sees it, as ``IngestMiddleware`` does ``/v1/traces``."""

    path = PATH
    receive = staticmethod(receive)
