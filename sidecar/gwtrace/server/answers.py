"""Answers as plain WSGI parts, so that the Flask app and the ingest middleware say the same.

The ingest path (``otlp_http.IngestMiddleware``) answers without Flask; an
error it gives must be byte for byte what the app would give, so both build
their error bodies here.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from flask import Response
from google.protobuf import json_format
from google.rpc import status_pb2

from .jaeger import error_envelope
from .jsonutil import dumps

PROTOBUF = "application/x-protobuf"
JSON = "application/json"

#: How long a client should wait before asking again after a store failure (503).
RETRY_AFTER_SECONDS = 5

#: An answer as plain WSGI parts: status code, headers, body.
Answer = Tuple[int, List[Tuple[str, str]], bytes]


def rpc_status_answer(status: int, code: int, message: str, as_json: bool, retry_after: Optional[int] = None) -> Answer:
    """An OTLP failure: ``google.rpc.Status`` in the request's encoding."""
    st = status_pb2.Status(code=code, message=message)
    if as_json:
        body, mimetype = dumps(json_format.MessageToDict(st)).encode(), JSON
    else:
        body, mimetype = st.SerializeToString(), PROTOBUF
    headers = [("Content-Type", mimetype)]
    if retry_after is not None:
        headers.append(("Retry-After", str(retry_after)))
    return status, headers, body


def envelope_answer(status: int, message: str) -> Answer:
    """A failure of the query API or the UI: Jaeger's error envelope."""
    return status, [("Content-Type", JSON)], dumps(error_envelope(status, message)).encode()


def to_response(answer: Answer) -> Response:
    """The same answer as a Flask response."""
    status, headers, body = answer
    return Response(body, status=status, headers=headers)
