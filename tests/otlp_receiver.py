"""A real OTLP/HTTP receiver for tests and benchmarks.

It decodes every request with the official ``opentelemetry.proto`` messages,
keeps the spans, and can misbehave on purpose (status codes, Retry-After,
hanging) so that fault tests exercise the sidecar against real HTTP.
"""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, List, Optional, Tuple

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span


def any_value(v: AnyValue):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


class ReceivedSpan:
    """A decoded span with its resource, flattened for assertions."""

    def __init__(self, span: Span, resource: Dict[str, object], scope: str) -> None:
        self.proto = span
        self.trace_id = span.trace_id.hex()
        self.span_id = span.span_id.hex()
        self.parent_id = span.parent_span_id.hex()
        self.name = span.name
        self.start_ns = span.start_time_unix_nano
        self.end_ns = span.end_time_unix_nano
        self.status_code = span.status.code
        self.status_message = span.status.message
        self.attributes = {kv.key: any_value(kv.value) for kv in span.attributes}
        self.events = [(e.name, e.time_unix_nano, {kv.key: any_value(kv.value) for kv in e.attributes})
                       for e in span.events]
        self.trace_state = span.trace_state
        self.flags = span.flags
        self.resource = resource
        self.scope = scope

    def __repr__(self) -> str:
        return f"<span {self.name} {self.trace_id[:8]}/{self.span_id}>"


class OtlpReceiver:
    """Threaded OTLP/HTTP receiver on 127.0.0.1 and a free port."""

    def __init__(self, keep_spans: bool = True, port: int = 0) -> None:
        self.keep_spans = keep_spans
        self.count = 0
        self.spans: List[ReceivedSpan] = []
        self.requests = 0
        #: The headers of every POST, in order (what a client sent: encoding, auth).
        self.headers: List[Dict[str, str]] = []
        self.lock = threading.Condition()
        # Scripted misbehaviour: a list of (status, headers) answers used first.
        self.script: List[Tuple[int, Dict[str, str]]] = []
        self.hang = False
        self.delay = 0.0          # seconds before answering each POST (a slow collector)
        #: The ExportMetricsServiceRequests POSTed to /v1/metrics, decoded, and the status they get.
        self.metrics: list = []
        self.metrics_status = 200
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path == "/v1/metrics":      # resource metrics: kept apart from the spans' counts
                    receiver._add_metrics(body, self.headers.get("Content-Encoding", ""))
                    self.send_response(receiver.metrics_status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                with receiver.lock:
                    receiver.requests += 1
                    receiver.headers.append({k.lower(): v for k, v in self.headers.items()})
                    scripted = receiver.script.pop(0) if receiver.script else None
                    hang = receiver.hang
                if hang:
                    time.sleep(3600)
                if receiver.delay:
                    time.sleep(receiver.delay)
                if scripted is not None:
                    status, headers = scripted
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                encoding = self.headers.get("Content-Encoding", "")
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                req = ExportTraceServiceRequest()
                req.ParseFromString(body)
                receiver._add(req)
                out = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}/v1/traces"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _add_metrics(self, body: bytes, encoding: str) -> None:
        from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

        if encoding == "gzip":
            body = gzip.decompress(body)
        req = ExportMetricsServiceRequest()
        req.ParseFromString(body)
        with self.lock:
            if self.metrics_status == 200:
                self.metrics.append(req)
            self.lock.notify_all()

    def wait_for_metrics(self, predicate, timeout: float = 15.0) -> list:
        """The metrics requests received, once ``predicate(requests)`` holds (or after ``timeout``)."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while not predicate(self.metrics) and time.monotonic() < deadline:
                self.lock.wait(0.05)
            return list(self.metrics)

    def _add(self, req: ExportTraceServiceRequest) -> None:
        if not self.keep_spans:
            n = sum(len(ss.spans) for rs in req.resource_spans for ss in rs.scope_spans)
            with self.lock:
                self.count += n
                self.lock.notify_all()
            return
        new = []
        for rs in req.resource_spans:
            resource = {kv.key: any_value(kv.value) for kv in rs.resource.attributes}
            for ss in rs.scope_spans:
                for span in ss.spans:
                    new.append(ReceivedSpan(span, resource, ss.scope.name))
        with self.lock:
            self.spans.extend(new)
            self.count += len(new)
            self.lock.notify_all()

    def start(self) -> "OtlpReceiver":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def wait_for(self, count: int, timeout: float = 15.0) -> List[ReceivedSpan]:
        deadline = time.monotonic() + timeout
        with self.lock:
            while len(self.spans) < count and time.monotonic() < deadline:
                self.lock.wait(0.05)
            return list(self.spans)

    def by_name(self, name: str) -> Optional[ReceivedSpan]:
        with self.lock:
            for span in self.spans:
                if span.name == name:
                    return span
        return None


def _serve_counting(port: int) -> None:
    """``python otlp_receiver.py [PORT]``: a receiver in its own process that
    prints its port and answers ``GET /count`` (benchmarks use it so the
    receiver does not share a GIL with what is measured), and
    ``GET /wait?count=N&timeout=S``, which answers the count as soon as it
    reaches N (or after S seconds): a benchmark waiting for its spans then
    costs no CPU, where polling /count every 5 ms took a tenth of a core in
    the benchmark and another in the receiver."""
    from urllib.parse import parse_qs, urlsplit

    r = OtlpReceiver(keep_spans=False, port=port)
    handler = r.server.RequestHandlerClass

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        with r.lock:
            if url.path == "/wait":
                target = int(query["count"][0])
                deadline = time.monotonic() + float(query.get("timeout", ["60"])[0])
                while r.count < target and time.monotonic() < deadline:
                    r.lock.wait(max(0.0, deadline - time.monotonic()))
            body = str(r.count).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    handler.do_GET = do_GET
    print(r.port, flush=True)
    r.server.serve_forever()


if __name__ == "__main__":
    import sys

    _serve_counting(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
