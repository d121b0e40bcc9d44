"""Who may ask, and what every answer carries: the bearer-token check and the security headers.

One place for both, used by the Flask app and by the ingest middleware that
answers ``POST /v1/traces`` before Flask, so that the two cannot drift apart.
"""

from __future__ import annotations

import hmac
from typing import List, Optional, Tuple

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
