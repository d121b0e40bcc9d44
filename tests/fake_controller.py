"""A stand-in for `gwtrace serve`'s controller on loopback, answering the contract's JSON (issue 32).

Modes: ``answer`` (the decide answer at once), ``slow`` (the same after
``delay`` s), ``hang`` (accepts, reads, never answers). It also serves
``/v1/gwtrace/snapshot`` with a ``Gwtrace-Commands`` header and takes
``/v1/gwtrace/control/results``; every request is kept for the tests.
"""

from __future__ import annotations

import http.server
import json
import socket
import threading
import time
from typing import Any, Dict, List, Optional


class FakeController:
    def __init__(self, mode: str = "answer", delay: float = 3.0,
                 answer: Optional[Dict[str, Any]] = None) -> None:
        self.mode = mode
        self.delay = delay
        self.answer = answer if answer is not None else {
            "level": "commands", "sample_ratio": 1.0, "sampled": True, "rule": "r12", "reason": "shifter: site X",
            "ttl_s": 300}
        #: The answer to a job's question, when it differs from a glidein's (``answer``).
        self.job_answer: Optional[Dict[str, Any]] = None
        self.commands: List[Dict[str, Any]] = []
        self.requests: List[Dict[str, Any]] = []
        self.results: List[Dict[str, Any]] = []
        self._stop = threading.Event()
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                fake.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                if self.path.endswith("/v1/gwtrace/decide"):
                    if fake.mode == "hang":
                        fake._stop.wait(30)
                        return
                    if fake.mode == "slow":
                        fake._stop.wait(fake.delay)
                    is_job = fake.job_answer is not None and b'"subject":"job"' in body.replace(b" ", b"")
                    self._json(fake.job_answer if is_job else fake.answer)
                elif self.path.endswith("/v1/gwtrace/snapshot"):
                    header = json.dumps(fake.commands, separators=(",", ":"))
                    self.send_response(200)
                    self.send_header("Gwtrace-Commands", header)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif self.path.endswith("/v1/gwtrace/control/results"):
                    got = json.loads(body)
                    fake.results.append(got)
                    self._json({"accepted": len(got.get("results", []))})
                else:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()

            def _json(self, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        class Server(http.server.ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                pass                     # a client that gave up (the point of the slow modes): not news

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> "FakeController":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()

    def decide_bodies(self) -> List[Dict[str, Any]]:
        return [json.loads(r["body"]) for r in self.requests if r["path"].endswith("/decide")]

    def wait_results(self, n: int = 1, timeout: float = 10.0) -> List[Dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while len(self.results) < n and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.results


def closed_port_url() -> str:
    """A loopback URL nothing listens on (connection refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"
