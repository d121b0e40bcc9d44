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
from typing import Any, Dict

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from google.rpc import code_pb2
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)

from ..store import TraceStore
from .answers import Answer
from .budget import DecodeBudget
from .otlp_http import IngestMiddleware, _Refused, receive_export, storing

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


def _store_metrics(store: TraceStore, body: bytes, as_json: bool) -> ExportMetricsServiceResponse:
    req = _decode(body, as_json)
    with storing("metrics"):
        result = store.put_metrics_result(req)
    resp = ExportMetricsServiceResponse()
    if result.rejected:
        resp.partial_success.rejected_data_points = result.rejected
        resp.partial_success.error_message = result.message
    return resp


def receive(environ: Dict[str, Any], store: TraceStore, max_bytes: int, budget: DecodeBudget) -> Answer:
    """Answer one ``POST /v1/metrics``, by the receiving path of ``/v1/traces`` (``otlp_http.receive_export``)."""
    return receive_export(environ, max_bytes, budget, lambda body, as_json: _store_metrics(store, body, as_json))


class MetricsMiddleware(IngestMiddleware):
    """Answers ``/v1/metrics`` before Flask sees it, as ``IngestMiddleware`` does ``/v1/traces``."""

    path = PATH
    receive = staticmethod(receive)
