"""The Flask application factory: OTLP receiver, Jaeger query API and web UI in one."""

from __future__ import annotations

import logging
import sqlite3
from typing import Optional

from flask import Flask, Response, request

from ..store import TraceStore
from . import accounting, analysis, api, control, jobs, now, otlp_http, otlp_metrics, snapshot_http, ui
from .answers import RETRY_AFTER_SECONDS, envelope_answer, to_response
from .auth import PUBLIC_ENDPOINTS, BearerAuth, LoopbackHostCheck, common_headers
from .budget import DEFAULT_DECODE_BUDGET, DecodeBudget

log = logging.getLogger("gwtrace.server")

def create_app(
    store: TraceStore,
    token: Optional[str] = None,
    *,
    max_body_bytes: int = otlp_http.DEFAULT_MAX_BODY_BYTES,
    host: str = "",
    decode_budget: int = DEFAULT_DECODE_BUDGET,
    control_verifier: Optional[object] = None,
) -> Flask:
    """Build the app over an open store.

    ``token``: when set, every request for data (ingest included) must carry
    ``Authorization: Bearer <token>``.  ``POST /v1/traces`` is answered by
    ``otlp_http.IngestMiddleware`` in front of Flask (and ``POST
    /v1/gwtrace/snapshot``, live snapshots, by ``snapshot_http``; ``POST /v1/metrics``, resource samples, by
    ``otlp_metrics``); the blueprints serve
    the rest. Without a token (the loopback default), only requests whose
    ``Host:`` names loopback (or ``host``, the name served on) are answered
    (auth.LoopbackHostCheck: DNS rebinding). ``decode_budget``: what the ingest requests in flight may take
    together to decode (``budget.DecodeBudget``). ``control_verifier``: the controller's issuer tokens
    (``controller.tokens.TokenVerifier``); the control blueprint checks its own callers (server/control.py).
    """
    app = Flask(__name__, static_folder=None)
    app.config.update(GWTRACE_STORE=store, GWTRACE_SERVER_TOKEN=token, GWTRACE_CONTROL_VERIFIER=control_verifier)
    auth = BearerAuth(token)
    app.register_blueprint(api.bp)
    app.register_blueprint(ui.bp)
    app.register_blueprint(accounting.bp)
    app.register_blueprint(analysis.bp)
    app.register_blueprint(now.bp)
    app.register_blueprint(jobs.bp)
    app.register_blueprint(control.bp)
    budget = DecodeBudget(decode_budget)
    app.wsgi_app = otlp_http.IngestMiddleware(app.wsgi_app, store, auth, max_body_bytes, budget)  # type: ignore[method-assign]
    app.wsgi_app = snapshot_http.SnapshotMiddleware(app.wsgi_app, store, auth, max_body_bytes, budget)  # type: ignore[method-assign]
    app.wsgi_app = control.DecideMiddleware(app.wsgi_app, store, token)  # type: ignore[method-assign]
    app.wsgi_app = otlp_metrics.MetricsMiddleware(app.wsgi_app, store, auth, max_body_bytes, budget)  # type: ignore[method-assign]
    if token is None:
        app.wsgi_app = LoopbackHostCheck(app.wsgi_app, [host])  # type: ignore[method-assign]
    _register_hooks(app, auth)
    return app


def _register_hooks(app: Flask, auth: BearerAuth) -> None:
    """Token check, security headers, health check and JSON error answers."""

    @app.before_request
    def require_token() -> Optional[Response]:
        if request.blueprint == "control":     # the controller checks its own callers (server/control.py)
            return None
        if request.endpoint in PUBLIC_ENDPOINTS or auth.allows(request.headers.get("Authorization", "")):
            return None
        return to_response(auth.refusal(request.path, (request.mimetype or "").lower()))

    @app.after_request
    def security_headers(resp: Response) -> Response:
        for key, value in common_headers(resp.mimetype or ""):
            resp.headers.setdefault(key, value)
        return resp

    @app.route("/healthz")
    def healthz() -> Response:
        return Response("ok\n", mimetype="text/plain")

    @app.errorhandler(404)
    def not_found(_exc: Exception) -> Response:
        return to_response(envelope_answer(404, f"no such path: {request.path}"))

    @app.errorhandler(405)
    def not_allowed(_exc: Exception) -> Response:
        return to_response(envelope_answer(405, f"{request.method} not allowed on {request.path}"))

    @app.errorhandler(OverflowError)
    def out_of_range(exc: OverflowError) -> Response:
        # The parameters are checked where they are parsed; this is the net for a number that still
        # reaches SQLite or int() too large: a 400 in one line, never a 500.
        return to_response(envelope_answer(400, f"a number in the request is out of range ({exc})"))

    @app.errorhandler(sqlite3.DatabaseError)
    def store_unavailable(exc: sqlite3.DatabaseError) -> Response:
        # A locked, full or damaged store: a time to retry, never a traceback.
        log.warning("store unavailable: %s", exc)
        resp = to_response(envelope_answer(503, f"trace store busy or unavailable: {exc}"))
        resp.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return resp
