"""The Flask application: OTLP receiver, Jaeger query API and web UI in one."""

from __future__ import annotations

import hmac
from typing import Optional

from flask import Flask, Response, request
from google.rpc import code_pb2

from ..store import TraceStore
from . import api, otlp_http, ui
from .jaeger import error_envelope
from .jsonutil import json_response

# Served without a token even when one is set: they hold no trace data (the
# pages are shells that fetch data with the token) and a browser cannot put an
# Authorization header on a page navigation.
_PUBLIC_ENDPOINTS = {"ui.static", "ui.search_page", "ui.trace_page", "ui.glidein_page", "healthz"}

# The UI loads nothing from elsewhere; say so to the browser as well, so that
# an injected tag could not load or run anything even if escaping failed.
_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


def create_app(
    store: TraceStore,
    token: Optional[str] = None,
    *,
    max_body_bytes: int = otlp_http.DEFAULT_MAX_BODY_BYTES,
) -> Flask:
    """Build the app over an open store.

    ``token``: when set, every request for data (ingest included) must carry
    ``Authorization: Bearer <token>``.
    """
    app = Flask(__name__, static_folder=None)
    app.config.update(
        GWTRACE_STORE=store,
        GWTRACE_TOKEN=token,
        GWTRACE_MAX_BODY_BYTES=max_body_bytes,
    )
    app.register_blueprint(otlp_http.bp)
    app.wsgi_app = otlp_http.IngestMiddleware(app.wsgi_app, store, token, max_body_bytes)  # type: ignore[method-assign]
    app.register_blueprint(api.bp)
    app.register_blueprint(ui.bp)

    expected = ("Bearer " + token).encode() if token else None

    @app.before_request
    def require_token() -> Optional[Response]:
        if expected is None or request.endpoint in _PUBLIC_ENDPOINTS:
            return None
        given = request.headers.get("Authorization", "").encode()
        if hmac.compare_digest(given, expected):
            return None
        message = otlp_http.TOKEN_MESSAGE
        if request.path.startswith("/v1/"):
            resp = otlp_http._status_response(
                401, code_pb2.UNAUTHENTICATED, message, (request.mimetype or "").lower() == otlp_http.JSON
            )
        else:
            resp = json_response(error_envelope(401, message), 401)
        resp.headers["WWW-Authenticate"] = 'Bearer realm="gwtrace"'
        return resp

    @app.after_request
    def security_headers(resp: Response) -> Response:
        resp.headers.setdefault("X-Content-Type-Options", "nosniff")
        resp.headers.setdefault("Referrer-Policy", "no-referrer")
        if resp.mimetype == "text/html":
            resp.headers.setdefault("Content-Security-Policy", _CSP)
            resp.headers.setdefault("X-Frame-Options", "DENY")
        return resp

    @app.route("/healthz")
    def healthz() -> Response:
        return Response("ok\n", mimetype="text/plain")

    @app.errorhandler(404)
    def not_found(_exc: Exception) -> Response:
        return json_response(error_envelope(404, f"no such path: {request.path}"), 404)

    @app.errorhandler(405)
    def not_allowed(_exc: Exception) -> Response:
        return json_response(error_envelope(405, f"{request.method} not allowed on {request.path}"), 405)

    return app
