"""The controller's HTTP side: the JSON API, the node endpoints, Jaeger's sampling API and the /control page.

Who is asking is decided here, not by the app's static-token check (these
routes are exempt from it, app.py): ``Authorization: Bearer <token>`` is

- the pilots' ``GWTRACE_SERVER_TOKEN``: may ask (``/v1/gwtrace/decide``) and
  answer (``/v1/gwtrace/control/results``), nothing else;
- otherwise a token of the configured issuer (``--control-issuer``), verified
  and mapped to a role (``controller.tokens``);
- with neither token nor issuer configured (the loopback default, where
  anyone on the machine may already read and write traces), the caller is an admin.

``/api/sampling`` (Jaeger remote sampling) needs no token: SDKs' samplers send
none, and it tells only a ratio. docs/control.md has the endpoints and examples.
"""

from __future__ import annotations

import hmac
import json
import sqlite3
import time
from http import HTTPStatus
from typing import Any, Callable, Dict, Iterable, Optional, Tuple

from flask import Blueprint, Response, current_app, render_template, request

from ..controller.book import NotFound, Refused, controller_for, question
from ..controller.commands import MAX_RESULTS_BYTES
from ..controller.roles import PILOT, Principal
from ..controller.rules import BadRule
from ..controller.sampling import service_question, strategy
from ..controller.tokens import BadToken
from ..wire.sampling import sampled
from .auth import common_headers
from .jsonutil import dumps, json_response

bp = Blueprint("control", __name__, template_folder="templates")

#: Largest decide body (the contract's strings are ≤ 256 characters each) and rule/command body.
MAX_DECIDE_BYTES = 16 * 1024
MAX_API_BYTES = 64 * 1024

PUBLIC = frozenset({"control.control_page", "control.sampling"})
LOCAL_ADMIN = Principal("local", "admin")


class _Answer(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _error(status: int, message: str) -> Response:
    resp = json_response({"error": message}, status)
    if status == 401:
        resp.headers["WWW-Authenticate"] = 'Bearer realm="gwtrace-control"'
    return resp


def _who(pilot_ok: bool) -> Principal:
    """The caller, from the Authorization header; _Answer 401/403 when not allowed here."""
    static = current_app.config.get("GWTRACE_SERVER_TOKEN")
    verifier = current_app.config.get("GWTRACE_CONTROL_VERIFIER")
    header = request.headers.get("Authorization", "")
    bearer = header[7:].strip() if header[:7].lower() == "bearer " else ""
    if static and bearer and hmac.compare_digest(bearer.encode("latin-1", "replace"), static.encode()):
        who: Principal = PILOT
    elif verifier is not None and bearer:
        try:
            who = verifier.principal(bearer)
        except BadToken as exc:
            raise _Answer(401, str(exc)) from None
    elif not static and verifier is None:
        who = LOCAL_ADMIN
    elif not static and pilot_ok:
        who = PILOT                       # tokenless ingest: the node endpoints are as open as /v1/traces
    elif verifier is None:
        raise _Answer(401, "this server takes no people's tokens (no --control-issuer): change rules with "
                           "`gwtrace control --store` on its machine")
    else:
        raise _Answer(401, "missing or wrong bearer token (Authorization: Bearer <token of the issuer>)")
    if who is PILOT and not pilot_ok:
        raise _Answer(403, "the pilots' token may ask for decisions and send results, not manage the controller")
    return who


def _body(limit: int) -> Any:
    if request.mimetype != "application/json":
        raise _Answer(415, "send Content-Type: application/json")
    if request.content_length is not None and request.content_length > limit:
        raise _Answer(413, f"body over {limit} bytes")
    raw = request.stream.read(limit + 1)
    if len(raw) > limit:
        raise _Answer(413, f"body over {limit} bytes")
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise _Answer(400, f"the body is not JSON: {exc}") from None


def _int_arg(name: str, default: int) -> int:
    value = request.args.get(name, "")
    if not value:
        return default
    if not value.isdigit() or len(value) > 12:
        raise _Answer(400, f"{name} must be a whole number")
    return int(value)


@bp.errorhandler(_Answer)
def _answer(exc: _Answer) -> Response:
    return _error(exc.status, str(exc))


@bp.errorhandler(BadRule)
def _bad(exc: BadRule) -> Response:
    return _error(400, str(exc))


@bp.errorhandler(Refused)
def _refused(exc: Refused) -> Response:
    return _error(403, str(exc))


@bp.errorhandler(NotFound)
def _missing(exc: NotFound) -> Response:
    return _error(404, str(exc))


def _controller() -> Any:
    return controller_for(current_app.config["GWTRACE_STORE"])


# ------------------------------------------------------------------ node endpoints


@bp.route("/v1/gwtrace/decide", methods=["POST"])
def decide() -> Response:
    _who(pilot_ok=True)
    return json_response(decide_answer(current_app.config["GWTRACE_STORE"], _body(MAX_DECIDE_BYTES)))


def decide_answer(store: Any, body: Any) -> Dict[str, Any]:
    """The contract's answer to one decide body (already parsed JSON); _Answer 400 on a bad one."""
    if not isinstance(body, dict) or body.get("subject") not in ("glidein", "job"):
        raise _Answer(400, 'the body is a JSON object with "subject": "glidein" or "job"')
    try:
        query = question(body)
    except BadRule as exc:
        raise _Answer(400, str(exc)) from None
    trace_id = query.get("trace_id")
    if trace_id is not None and (len(trace_id) != 32 or any(c not in "0123456789abcdef" for c in trace_id)):
        raise _Answer(400, "trace_id must be 32 hex digits")
    made = controller_for(store).decide(query)
    ratio = made.sample_ratio.value
    deciding = made.rule
    return {"level": made.level.value, "sample_ratio": ratio,
            "sampled": sampled(trace_id, ratio) if trace_id is not None and ratio is not None else None,
            "rule": deciding.id if deciding else None, "reason": made.reason(), "ttl_s": made.ttl_s}


class DecideMiddleware:
    """Answers the pilots' ``POST /v1/gwtrace/decide`` before Flask, as ``otlp_http.IngestMiddleware`` does ingest.

    Why: it is the controller's hot path (every glidein and job start asks), and Flask's request and response
    machinery costs several times the decision itself. Only the plain case is taken here (POST, JSON, the
    pilots' token or none configured); anything else (a person's token, a wrong method or type) goes to the
    Flask route, which answers it with the same code.
    """

    def __init__(self, app: Callable[..., Iterable[bytes]], store: Any, token: Optional[str]):
        self.app, self.store = app, store
        self._auth = ("Bearer " + token).encode() if token else None

    def __call__(self, environ: Dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if (environ.get("PATH_INFO") != "/v1/gwtrace/decide" or environ.get("REQUEST_METHOD") != "POST"
                or str(environ.get("CONTENT_TYPE", "")).split(";")[0].strip().lower() != "application/json"
                or not self._allowed(environ.get("HTTP_AUTHORIZATION", ""))):
            return self.app(environ, start_response)
        status, answer = self._answer(environ)
        body = dumps(answer).encode()
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))] + common_headers("")
        start_response(f"{status} {HTTPStatus(status).phrase}", headers)
        return [body]

    def _allowed(self, authorization: str) -> bool:
        if self._auth is None:
            return True
        return hmac.compare_digest(authorization.encode("latin-1", "replace"), self._auth)

    def _answer(self, environ: Dict[str, Any]) -> Tuple[int, Dict[str, Any]]:
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_DECIDE_BYTES:
            return 413, {"error": f"body over {MAX_DECIDE_BYTES} bytes (or no Content-Length)"}
        try:
            body = json.loads(environ["wsgi.input"].read(length))
        except ValueError as exc:
            return 400, {"error": f"the body is not JSON: {exc}"}
        try:
            return 200, decide_answer(self.store, body)
        except _Answer as exc:
            return exc.status, {"error": str(exc)}
        except sqlite3.DatabaseError as exc:       # only when the cached rules are reloaded
            return 503, {"error": f"trace store busy or unavailable: {exc}"}


@bp.route("/v1/gwtrace/control/results", methods=["POST"])
def results() -> Response:
    _who(pilot_ok=True)
    return json_response({"accepted": _controller().record_results(_body(MAX_RESULTS_BYTES))})


# ------------------------------------------------------------------ JSON API


@bp.route("/api/control/rules", methods=["GET"])
def list_rules() -> Response:
    who = _who(pilot_ok=False)
    expired = request.args.get("expired", "") in ("1", "true", "yes")
    return json_response({"rules": [r.to_dict() for r in _controller().rules(include_expired=expired, who=who)]})


@bp.route("/api/control/rules", methods=["POST"])
def set_rule() -> Response:
    who = _who(pilot_ok=False)
    return json_response({"rule": _controller().set_rule(who, _body(MAX_API_BYTES)).to_dict()}, 201)


@bp.route("/api/control/rules", methods=["DELETE"])
@bp.route("/api/control/rules/<rule_id>", methods=["DELETE"])
def remove_rule(rule_id: Optional[str] = None) -> Response:
    who = _who(pilot_ok=False)
    rule_id = rule_id or request.args.get("id", "")
    if not rule_id:
        raise _Answer(400, "name the rule: DELETE /api/control/rules/<id> or ?id=<id>")
    return json_response({"removed": _controller().remove_rule(who, rule_id).to_dict()})


@bp.route("/api/control/explain")
def explain() -> Response:
    who = _who(pilot_ok=False)
    asked = question(request.args)
    if who.role == "user" and asked.get("owner", who.name) != who.name:
        raise _Answer(403, f"a user explains decisions for their own jobs (owner={who.name})")
    return json_response(_controller().explain(asked, request.args.get("operation") or None))


@bp.route("/api/control/audit")
def audit() -> Response:
    who = _who(pilot_ok=False)
    rows = _controller().audit(who, _int_arg("after", 0), _int_arg("limit", 100))
    return json_response({"audit": rows, "who": {"name": who.name, "role": who.role, "sites": sorted(who.sites)}})


@bp.route("/api/control/commands", methods=["POST"])
def queue_command() -> Response:
    who = _who(pilot_ok=False)
    return json_response({"command": _controller().queue_command(who, _body(MAX_API_BYTES))}, 201)


@bp.route("/api/control/commands/<command_id>")
def command(command_id: str) -> Response:
    who = _who(pilot_ok=False)
    return json_response({"command": _controller().command(who, command_id)})


# ------------------------------------------------------------- Jaeger, the page


@bp.route("/api/sampling")
def sampling() -> Response:
    service = request.args.get("service", "")
    made = strategy(_controller().index(), service_question(service, request.args), time.time())
    return json_response(made)


@bp.route("/control")
def control_page() -> str:
    return render_template("control.html", page="control")


def commands_header(store: Any, key: str) -> Optional[str]:
    """The ``Gwtrace-Commands`` header for a snapshot from ``key`` (snapshot_http's hook), or None."""
    return controller_for(store).commands_header(key)


__all__ = ["bp", "PUBLIC", "DecideMiddleware", "commands_header"]
