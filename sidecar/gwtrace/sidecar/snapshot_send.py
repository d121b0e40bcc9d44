"""Where a live snapshot goes: a gwtrace serve over HTTP, or the embedded store.

Why ``http.client`` and not ``requests`` (which the OTLP exporter uses): a
snapshot is one small POST a minute, and ``requests`` spent ~2 ms of CPU per
POST on the node (session, adapters, header merging), more than encoding the
snapshot. One kept-alive connection, reopened after any failure, costs a
fraction of that. Same headers (``OTEL_EXPORTER_OTLP_[TRACES_]HEADERS``: the
bearer token), CA file and gzip setting as the spans. Python 3.9-compatible.
"""

from __future__ import annotations

import gzip
import http.client
import ssl
import urllib.parse
from typing import Any, Mapping, Optional

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from gwtrace.export.otlpenv import otlp_env
from gwtrace.wire.redact import strip_userinfo

MAX_SEND_TIMEOUT_S = 5.0
#: What a store answers to a heartbeat for a glidein it has no snapshot of.
UNKNOWN_GLIDEIN = 409


class SendError(Exception):
    """A snapshot that did not arrive; ``unknown`` when the store lacks the glidein (409)."""

    def __init__(self, message: str, unknown: bool = False) -> None:
        super().__init__(message)
        self.unknown = unknown


class HttpSender:
    """POSTs snapshots to a gwtrace serve's ``/v1/gwtrace/snapshot`` on one kept-alive connection."""

    def __init__(self, url: str, env: Optional[Mapping[str, str]] = None) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"GWTRACE_SNAPSHOT_ENDPOINT {strip_userinfo(url)!r} is not an http(s) URL")
        self.url = url
        self.destination = strip_userinfo(url)
        self.https = parts.scheme == "https"
        self.host, self.port = parts.hostname, parts.port
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        otlp = otlp_env(env)
        self.headers = {"Content-Type": "application/x-protobuf", **otlp.headers}
        self.gzip = otlp.compression == "gzip"
        if self.gzip:
            self.headers["Content-Encoding"] = "gzip"
        self.context = ssl.create_default_context(cafile=otlp.certificate) if self.https else None
        self.timeout = min(otlp.timeout_s, MAX_SEND_TIMEOUT_S)
        self.conn: Optional[http.client.HTTPConnection] = None
        #: The last answer's Gwtrace-Commands header (the back channel, commands.py), or None.
        self.commands: Optional[str] = None

    def _connection(self) -> http.client.HTTPConnection:
        if self.conn is None:
            if self.https:
                self.conn = http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout,
                                                        context=self.context)
            else:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        return self.conn

    def send(self, body: bytes) -> None:
        if self.gzip:
            body = gzip.compress(body, 6)
        try:
            conn = self._connection()
            conn.request("POST", self.path, body, self.headers)
            resp = conn.getresponse()
            resp.read()
            status = resp.status
            self.commands = resp.getheader("Gwtrace-Commands") if status == 200 else None
            if resp.will_close:
                self.close()
        except (OSError, http.client.HTTPException) as exc:
            self.close()               # a fresh connection next time
            raise SendError(f"{type(exc).__name__}: {exc}") from None
        if status == UNKNOWN_GLIDEIN:
            raise SendError("the store has no snapshot of this glidein", unknown=True)
        if status != 200:
            raise SendError(f"HTTP {status}")

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class StoreSender:
    """Writes snapshots into the embedded store (the file the spans go to)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.destination = f"embedded store {store.path}"

    def send(self, body: bytes) -> None:
        req = ExportTraceServiceRequest()
        req.ParseFromString(body)
        if not self.store.put_live_snapshot(req):
            raise SendError("the store has no snapshot of this glidein", unknown=True)

    def close(self) -> None:
        pass
