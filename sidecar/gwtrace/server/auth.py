"""Who may ask, and what every answer carries: the bearer-token check and the security headers.

One place for both, used by the Flask app and by the ingest middleware that
answers ``POST /v1/traces`` before Flask, so that the two cannot drift apart.
"""

from __future__ import annotations

import hmac
import ipaddress
from http import HTTPStatus
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Optional, Tuple

from google.rpc import code_pb2

from .answers import JSON, Answer, envelope_answer, rpc_status_answer

#: What a request without the right token is told.
TOKEN_MESSAGE = "missing or wrong bearer token (Authorization: Bearer <GWTRACE_SERVER_TOKEN>)"

_CHALLENGE = ("WWW-Authenticate", 'Bearer realm="gwtrace"')

# Served without a token even when one is set: they hold no trace data (the
# pages are shells that fetch data with the token) and a browser cannot put an
# Authorization header on a page navigation.
PUBLIC_ENDPOINTS = frozenset({"ui.static", "ui.search_page", "ui.trace_page", "ui.glidein_page", "healthz",
                              "accounting.accounting_page", "accounting.glideins_page", "analysis.analysis_page",
                              "analysis.hints_page", "analysis.outliers_page", "now.now_page",
                              "jobs.job_page"})

#: Headers every answer carries.
_COMMON_HEADERS = (("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"))

# The UI loads nothing from elsewhere; say so to the browser as well, so that
# an injected tag could not load or run anything even if escaping failed.
_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
_HTML_HEADERS = (("Content-Security-Policy", _CSP), ("X-Frame-Options", "DENY"))


class BearerAuth:
    """``Authorization: Bearer <token>`` on every request for data, when a token is set."""

    def __init__(self, token: Optional[str]):
        self._expected = ("Bearer " + token).encode() if token else None

    def allows(self, authorization: str) -> bool:
        """Whether a request with this ``Authorization`` header (as WSGI gives it) may proceed."""
        if self._expected is None:
            return True
        # WSGI headers are latin-1 decoded bytes: encoding back gives the bytes sent.
        return hmac.compare_digest(authorization.encode("latin-1", "replace"), self._expected)

    @staticmethod
    def refusal(path: str, mimetype: str) -> Answer:
        """401 in the form the path's clients read: an OTLP Status under /v1/, else Jaeger's envelope."""
        if path.startswith("/v1/"):
            status, headers, body = rpc_status_answer(401, code_pb2.UNAUTHENTICATED, TOKEN_MESSAGE, mimetype == JSON)
        else:
            status, headers, body = envelope_answer(401, TOKEN_MESSAGE)
        return status, headers + [_CHALLENGE], body


def common_headers(mimetype: str) -> List[Tuple[str, str]]:
    """The security headers of an answer of this media type."""
    if mimetype == "text/html":
        return list(_COMMON_HEADERS + _HTML_HEADERS)
    return list(_COMMON_HEADERS)


#: Host names a tokenless server answers to, besides loopback IP literals.
LOOPBACK_NAMES = frozenset({"localhost"})


def loopback_host(host: str, names: FrozenSet[str] = LOOPBACK_NAMES) -> bool:
    """Whether a ``Host:`` header (any port) names this machine's loopback:
    one of ``names`` (``localhost``), an IPv4 literal in 127.0.0.0/8 or the
    IPv6 loopback literal (``[::1]``). A DNS name is never taken for one (that
    is what DNS rebinding relies on)."""
    host = host.strip().lower()
    if host.startswith("["):
        name, bracket, port = host[1:].partition("]")
        if not bracket or (port and not (port[:1] == ":" and port[1:].isdigit())):
            return False
        try:
            return ipaddress.IPv6Address(name).is_loopback
        except ValueError:
            return False
    name, _, port = host.rpartition(":") if ":" in host else (host, "", "")
    if port and not port.isdigit():
        return False
    if name.rstrip(".") in names:
        return True
    try:
        return ipaddress.IPv4Address(name).is_loopback
    except ValueError:
        return False


class LoopbackHostCheck:
    """WSGI middleware for the tokenless loopback default: only requests whose
    ``Host:`` names loopback (loopback_host) get an answer; others a 403 in one
    line. Why: without a token, any web page the user opens could make the
    browser send requests to 127.0.0.1 under the page's own DNS name
    (DNS rebinding) and read the traces back; a browser always sends that name
    in ``Host:``. Not used with a token, which such a page does not have."""

    def __init__(self, app: Callable[..., Iterable[bytes]], extra_names: Iterable[str] = ()):
        self.app = app
        self.names = LOOPBACK_NAMES | frozenset(n.strip().lower().rstrip(".") for n in extra_names if n.strip())

    def __call__(self, environ: Dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        host = environ.get("HTTP_HOST")
        if host is None or loopback_host(host, self.names):    # no Host (HTTP/1.0): no browser sent it
            return self.app(environ, start_response)
        status, headers, body = self.refusal(environ, host)
        headers += [("Content-Length", str(len(body)))] + common_headers("")
        start_response(f"{status} {HTTPStatus(status).phrase}", headers)
        return [body]

    @staticmethod
    def refusal(environ: Dict[str, Any], host: str) -> Answer:
        """403 in the form the path's clients read (as BearerAuth.refusal)."""
        shown = host if len(host) <= 100 and host.isprintable() else repr(host[:100])
        message = (f"Host {shown} is not a loopback name: without GWTRACE_SERVER_TOKEN this server answers only "
                   f"localhost, 127.0.0.1 and [::1] (DNS rebinding); set GWTRACE_SERVER_TOKEN to serve other names")
        if str(environ.get("PATH_INFO", "")).startswith("/v1/"):
            mimetype = str(environ.get("CONTENT_TYPE", "")).split(";")[0].strip().lower()
            return rpc_status_answer(403, code_pb2.PERMISSION_DENIED, message, mimetype == JSON)
        return envelope_answer(403, message)
