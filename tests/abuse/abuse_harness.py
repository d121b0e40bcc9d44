"""Tools for the abuse suite: a `gwtrace serve` child watched for memory, hostile bodies, a /healthz prober.

Everything stays on loopback and every loop is bounded in count and time.  The server's memory is
watched from /proc while an attack runs: past ``HARD_CEILING_BYTES`` the server is killed, so a
regression fails the test instead of exhausting the machine the suite runs on.
"""

from __future__ import annotations

import gzip
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Callable, Dict, List, Optional, Tuple

import requests

SERVE = "import sys; from gwtrace.cli.serve import main; sys.exit(main(sys.argv[1:]))"
#: the server is killed past this resident size (the test then fails): CI machines are shared
HARD_CEILING_BYTES = 1536 << 20


def _status_kb(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class WatchedServer:
    """A `gwtrace serve` child on a free loopback port; its peak RSS is read from /proc (VmHWM)."""

    def __init__(self, db: str, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", SERVE, "--port", "0", "--db", db, *args],
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stderr.readline()
        found = re.search(r"listening on (http://\S+) ", line)
        if not found:
            self.proc.kill()
            raise AssertionError(f"server did not start: {line}{self.proc.stderr.read()}")
        self.url = found.group(1)
        self.host, port = self.url[len("http://"):].rsplit(":", 1)
        self.port = int(port)
        self.killed_at: Optional[int] = None
        self._stop = threading.Event()
        self._watch = threading.Thread(target=self._guard, daemon=True)
        self._watch.start()

    def _guard(self) -> None:
        """Kill the server when it passes the hard ceiling (bounded: ends with the server or ``stop``)."""
        while not self._stop.wait(0.02) and self.proc.poll() is None:
            rss = _status_kb(self.proc.pid, "VmRSS") * 1024
            if rss > HARD_CEILING_BYTES:
                self.killed_at = rss
                self.proc.kill()
                return

    def rss(self) -> int:
        return _status_kb(self.proc.pid, "VmRSS") * 1024

    def peak_rss(self) -> int:
        """The server's peak resident size so far (the kernel's high-water mark)."""
        return _status_kb(self.proc.pid, "VmHWM") * 1024

    def stop(self) -> Tuple[int, str]:
        self._stop.set()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(timeout=10)
        return rc, self.proc.stderr.read()


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(tag: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field (tag byte already holding field number and wire type 2)."""
    return bytes([tag]) + varint(len(payload)) + payload


TRACE_ID = bytes(range(1, 17))


def span_head(span_id: int = 1) -> bytes:
    """trace id, span id, name, start and end: a valid span before its attributes."""
    return (field(0x0A, TRACE_ID) + field(0x12, span_id.to_bytes(8, "big")) + field(0x2A, b"attack")
            + b"\x39" + (1_700_000_000 * 10**9).to_bytes(8, "little")
            + b"\x41" + (1_700_000_001 * 10**9).to_bytes(8, "little"))


def request_of_span(span: bytes) -> bytes:
    """An ExportTraceServiceRequest holding one ResourceSpans, one ScopeSpans and ``span``."""
    resource = field(0x0A, field(0x0A, field(0x0A, b"service.name") + field(0x12, field(0x0A, b"attacker"))))
    return field(0x0A, resource + field(0x12, field(0x12, span)))


def empty_attributes_body(count: int) -> bytes:
    """The issue's amplification: one span with ``count`` empty attributes (2 bytes each on the wire)."""
    return request_of_span(span_head() + b"\x4a\x00" * count)


def empty_attributes_json(count: int) -> bytes:
    """The OTLP/JSON form: ``count`` ``{}`` attributes."""
    attrs = b",".join([b"{}"] * count)
    return (b'{"resourceSpans":[{"resource":{},"scopeSpans":[{"spans":[{"traceId":"' + TRACE_ID.hex().encode()
            + b'","spanId":"0000000000000001","name":"attack","startTimeUnixNano":"1700000000000000000",'
            b'"endTimeUnixNano":"1700000001000000000","attributes":[' + attrs + b"]}]}]}]}")


def gzipped(body: bytes) -> bytes:
    return gzip.compress(body, 9)


class HealthProbe:
    """GET /healthz in a loop (bounded in count and time) and keep each answer's latency."""

    def __init__(self, url: str, limit_s: float = 60.0, max_probes: int = 2000) -> None:
        self.url, self.limit_s, self.max_probes = url, limit_s, max_probes
        self.latencies: List[float] = []
        self.failures: List[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        deadline = time.monotonic() + self.limit_s
        for _ in range(self.max_probes):
            if self._stop.is_set() or time.monotonic() > deadline:
                return
            began = time.monotonic()
            try:
                ok = requests.get(self.url + "/healthz", timeout=10).status_code == 200
                if not ok:
                    self.failures.append("not 200")
            except requests.RequestException as exc:
                self.failures.append(type(exc).__name__)
            self.latencies.append(time.monotonic() - began)
            self._stop.wait(0.05)

    def __enter__(self) -> "HealthProbe":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=20)


def in_parallel(calls: List[Callable[[], object]], timeout_s: float = 120.0) -> List[object]:
    """Run ``calls`` in threads at once; the result (or the exception) of each, in order."""
    results: Dict[int, object] = {}

    def run(i: int, call: Callable[[], object]) -> None:
        try:
            results[i] = call()
        except Exception as exc:  # noqa: BLE001 - reported to the test as a value
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i, c), daemon=True) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout_s
    for t in threads:
        t.join(timeout=max(0.0, deadline - time.monotonic()))
    return [results.get(i, TimeoutError("still running")) for i in range(len(calls))]


def half_sent_connections(host: str, port: int, count: int) -> List[socket.socket]:
    """``count`` connections that each send part of a request and then stay silent."""
    socks = []
    for _ in range(count):
        s = socket.create_connection((host, port), timeout=5)
        s.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-protobuf\r\n"
                  b"Content-Length: 100000\r\n\r\nabc")
        socks.append(s)
    return socks


def close_all(socks: List[socket.socket]) -> None:
    for s in socks:
        try:
            s.close()
        except OSError:
            pass


def env_without_tracing() -> Dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("GWTRACE_", "OTEL_"))}
