"""Where ``gwtrace ingest`` sends what it found: the configured OTLP endpoint, else the embedded store.

Kept apart from the command (``ingest.py``) so each stays small; ``ingest`` re-exports both names.
"""

from __future__ import annotations

import gzip
import time
from typing import TYPE_CHECKING, Any, Optional

from gwtrace.export.otlp import RETRYABLE_STATUS, parse_retry_after
from gwtrace.export.otlpenv import METRICS_PATH, TRACES_PATH, metrics_endpoint, otlp_env
from gwtrace.store import TraceStore
from gwtrace.wire.redact import strip_userinfo

if TYPE_CHECKING:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

HTTP_ATTEMPTS = 5


class IngestError(RuntimeError):
    """A block could not be forwarded (the collector refused or is away)."""


class Forwarder:
    """Sends an OTLP request to the configured endpoint, else the embedded store.

    Its settings are the exporter's (export/otlpenv.py); it posts the request
    bytes itself because block payloads are already-encoded requests. It
    retries in place, a few times, where the sidecar keeps an outbox: ingest
    is a command someone waits for, and a failed block is ingested again later.
    """

    def __init__(self, store: Optional[str] = None) -> None:
        """``store``: a store file named on the command line (``--store``), which wins over an
        endpoint in the environment: the person said where the spans go."""
        self.store = None
        self.endpoint: Optional[str] = None
        otlp = otlp_env()
        if store:
            self.store = TraceStore(store)
        elif otlp.configured:
            if otlp.token_problem:          # unauthenticated, every block would be refused
                raise IngestError(f"{otlp.token_problem}; nothing sent")
            self.endpoint = otlp.endpoint
            self.headers = {"Content-Type": "application/x-protobuf", **otlp.headers}
            self.gzip = otlp.compression == "gzip"
            if self.gzip:
                self.headers["Content-Encoding"] = "gzip"
            self.timeout = otlp.timeout_s
            self.verify = otlp.certificate or True
            self.cert = (otlp.client_certificate, otlp.client_key) if otlp.client_certificate and otlp.client_key \
                else otlp.client_certificate
            import requests

            self.session = requests.Session()
        else:
            self.store = TraceStore()

    @property
    def destination(self) -> str:
        return f"OTLP/HTTP {strip_userinfo(self.endpoint)}" if self.endpoint else f"embedded store {self.store.path}"

    def send(self, request: ExportTraceServiceRequest) -> None:
        if self.store is not None:
            self.store.ingest(request)
            return
        self._post(self.endpoint, request.SerializeToString())

    def send_metrics(self, request: Any) -> int:
        """A block's ``ExportMetricsServiceRequest``: into the store (points kept), else to the collector's
        ``/v1/metrics`` (``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT``, else the traces endpoint's base)."""
        if self.store is not None:
            return self.store.put_metrics(request)
        url = metrics_endpoint()
        if not url:             # only the traces endpoint is set: its base, as the OTel SDKs do not guess
            base = self.endpoint.rstrip("/")
            url = (base[: -len(TRACES_PATH)] if base.endswith(TRACES_PATH) else base) + METRICS_PATH
        self._post(url, request.SerializeToString())
        return -1

    def _post(self, url: str, body: bytes) -> None:
        import requests

        if self.gzip:
            body = gzip.compress(body)
        delay = 1.0
        for attempt in range(HTTP_ATTEMPTS):
            try:
                r = self.session.post(url, data=body, headers=self.headers,
                                      timeout=self.timeout, verify=self.verify, cert=self.cert)
            except requests.RequestException as exc:
                reason = f"{type(exc).__name__}"
            else:
                if 200 <= r.status_code < 300:
                    return
                if r.status_code not in RETRYABLE_STATUS:
                    raise IngestError(f"collector refused the block: HTTP {r.status_code}")
                reason = f"HTTP {r.status_code}"
                retry_after = parse_retry_after(r.headers.get("Retry-After"))
                if retry_after is not None:
                    delay = retry_after
            if attempt + 1 < HTTP_ATTEMPTS:
                time.sleep(delay)
                delay = min(delay * 2, 30.0)
        raise IngestError(f"collector unavailable after {HTTP_ATTEMPTS} attempts ({reason})")

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
