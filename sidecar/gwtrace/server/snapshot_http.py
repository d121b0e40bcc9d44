"""``POST /v1/gwtrace/snapshot``: the sidecars' live snapshots of their open spans.

A path of its own, under gwtrace's name, so that nothing a snapshot holds can
ever be taken for real spans: an OTLP backend has no such path, and here the
body goes to ``store.live`` (``live_snapshots``), never to the chunks that
traces, search and the Jaeger API read. The body is an OTLP
``ExportTraceServiceRequest`` (protobuf or JSON, gzip or not, the same size
caps and bearer token as ``/v1/traces``) whose scope is ``gwtrace.snapshot``
and whose every span carries ``gwtrace.snapshot=true``; anything else is 400.

Answers: 200 stored; 409 a heartbeat (``gwtrace.snapshot.unchanged``) for a
glidein the store has no snapshot of (the sidecar then sends a full one);
400 not a snapshot; 413/415 as ``/v1/traces``; 503 with Retry-After when the
store is busy or the decode budget full.  The same decode bounds and span
limits as ``/v1/traces`` apply.
"""

from __future__ import annotations

import logging
import sqlite3
from typing import Any, Dict, List, Tuple

from google.rpc import code_pb2

from ..store import TraceStore, limits
from ..store.live import BadSnapshot
from . import control
from .answers import JSON, RETRY_AFTER_SECONDS, Answer, rpc_status_answer
from .budget import DecodeBudget
from .otlp_http import (
    _PROTOBUF_TYPES, IngestMiddleware, _decode, _mimetype, _Refused, decode_cost, decoding, read_request,
)

log = logging.getLogger("gwtrace.server")

PATH = "/v1/gwtrace/snapshot"


def receive(environ: Dict[str, Any], store: TraceStore, max_bytes: int, budget: DecodeBudget) -> Answer:
    """Answer one ``POST /v1/gwtrace/snapshot``."""
    mimetype = _mimetype(environ)
    as_json = mimetype == JSON
    if mimetype not in _PROTOBUF_TYPES and not as_json:
        return rpc_status_answer(415, code_pb2.INVALID_ARGUMENT, f"unsupported media type {mimetype or '(none)'}",
                                 False)
    try:
        body = read_request(environ, max_bytes)
        with decoding(budget, decode_cost(body, as_json)):
            req, _, _ = _decode(body, as_json)
            known = _put(store, req)
        if not known:
            raise _Refused(409, code_pb2.NOT_FOUND, "no snapshot of this glidein: send a full one")
    except _Refused as refused:
        return rpc_status_answer(refused.status, refused.code, refused.message, as_json, refused.retry_after)
    return 200, [("Content-Type", JSON)] + _commands(store, req), b'{"stored":true}'


def _commands(store: TraceStore, req: Any) -> List[Tuple[str, str]]:
    """The back channel: the controller's commands pending for this glidein, in ``Gwtrace-Commands``."""
    key = next((kv.value.string_value for kv in req.resource_spans[0].scope_spans[0].scope.attributes
                if kv.key == "gwtrace.snapshot.key"), "")
    try:
        value = control.commands_header(store, key) if key else None
    except sqlite3.DatabaseError as exc:       # the snapshot is stored; the commands wait for the next one
        log.warning("controller commands unavailable: %s", exc)
        return []
    return [("Gwtrace-Commands", value)] if value else []


def _put(store: TraceStore, req: Any) -> bool:
    """The snapshot, cut to the span limits as stored spans are, into the store."""
    try:
        limits.enforce(req)
        return store.put_live_snapshot(req)
    except limits.TooLarge as exc:
        raise _Refused(413, code_pb2.RESOURCE_EXHAUSTED, str(exc)) from None
    except BadSnapshot as exc:
        raise _Refused(400, code_pb2.INVALID_ARGUMENT, f"not a gwtrace snapshot: {exc}") from None
    except sqlite3.DatabaseError as exc:
        log.warning("store unavailable for a snapshot: %s", exc)
        raise _Refused(503, code_pb2.UNAVAILABLE, f"trace store busy or unavailable: {exc}",
                       retry_after=RETRY_AFTER_SECONDS) from None


class SnapshotMiddleware(IngestMiddleware):
    """Answers ``/v1/gwtrace/snapshot`` before Flask sees it, as ``IngestMiddleware`` does ``/v1/traces``."""

    path = PATH
    receive = staticmethod(receive)
