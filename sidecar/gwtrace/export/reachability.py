"""Is the collector there? One quick answer per export attempt.

The SDK's OTLP/HTTP exporter retries a failed connection for its whole
timeout (~10 s) before it says FAILURE, logging a line per attempt. gwtrace
has its own retry schedule (the outbox, sidecar.py), so the session it hands
the exporter turns a connection that cannot be made into one
EndpointUnreachable at once, and remembers the last response, which the SDK
hides, for Delivery (exporter.py) to tell retry from refusal.
"""

from __future__ import annotations

from typing import Dict, List, Optional

import requests

from gwtrace.export.otlpenv import endpoint_problem  # noqa: F401 - its home; kept importable here
from gwtrace.wire.redact import strip_userinfo


class EndpointUnreachable(Exception):
    """The collector could not be reached (refused, no route, bad URL).

    Raised by RecordingSession past the SDK exporter, which would otherwise
    retry for its whole timeout (~10 s) before saying FAILURE: the outbox
    retries on its own schedule, counts each failed attempt
    (``export_failures``) and, at stop, gives up at once (sidecar.py).
    Not a ``requests`` exception, so that no SDK version takes it for a
    connection error to retry.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class RecordingSession(requests.Session):
    """Remembers the last HTTP response, which the SDK exporter hides, and
    turns a failed connection into one quick EndpointUnreachable."""

    def __init__(self) -> None:
        super().__init__()
        self.last_status: Optional[int] = None
        self.last_retry_after: Optional[str] = None
        self.last_error: Optional[EndpointUnreachable] = None
        self.hooks["response"].append(self._record)

    def _record(self, response: requests.Response, *args, **kwargs) -> requests.Response:
        self.last_status = response.status_code
        self.last_retry_after = response.headers.get("Retry-After")
        return response

    def request(self, *args, **kwargs) -> requests.Response:  # type: ignore[override]
        try:
            return super().request(*args, **kwargs)
        except (requests.exceptions.InvalidURL, requests.exceptions.InvalidSchema,
                requests.exceptions.MissingSchema) as exc:
            self.last_error = EndpointUnreachable("bad_endpoint", strip_userinfo(f"bad endpoint URL: {exc}"))
        except requests.exceptions.ConnectTimeout:
            self.last_error = EndpointUnreachable("connect_timeout", "connection timed out")
        except requests.exceptions.ConnectionError as exc:
            if _refused(exc):
                self.last_error = EndpointUnreachable("connection_refused", "connection refused")
            else:
                self.last_error = EndpointUnreachable("connection",
                                                      strip_userinfo(f"cannot connect: {_innermost(exc)}"))
        raise self.last_error


def _chain(exc: BaseException) -> List[BaseException]:
    """exc and what it wraps (causes, contexts, urllib3's reason), outermost first."""
    seen: List[BaseException] = []
    todo: List[object] = [exc]
    while todo and len(seen) < 16:
        e = todo.pop(0)
        if not isinstance(e, BaseException) or any(e is s for s in seen):
            continue
        seen.append(e)
        todo.extend([e.__cause__, e.__context__, getattr(e, "reason", None), *e.args[:1]])
    return seen


def _refused(exc: BaseException) -> bool:
    return any(isinstance(e, ConnectionRefusedError) for e in _chain(exc)) or "Connection refused" in str(exc)


def _innermost(exc: BaseException) -> str:
    """The most specific message in the chain (a DNS error, ...), one line."""
    chain = _chain(exc)
    text = str(chain[-1] if len(chain) > 1 else exc)
    return " ".join(text.split())[:200]
