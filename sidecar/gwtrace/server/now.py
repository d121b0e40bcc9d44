"""The 'now' page: glideins alive per site/entry, their phase and jobs, and the sites' red lights.

A static shell (``/now``) that fetches ``/ui/api/now``, whose JSON is what
``gwtrace now --format json`` prints (``live.now.now_data``, one function for
both). Query parameters: ``stale`` (seconds), and the health rule's
``window``, ``baseline_days``, ``factor``, ``min_jump``, ``min_failures``, ``chronic``.
``/ui/api/factory-states?hours=&bucket=``: per entry, glideins idle, running and
held over time, from the backfilled Condor-G logs (``live.now.factory_history``).
"""

from __future__ import annotations

from typing import Dict, Optional

from flask import Blueprint, Response, current_app, render_template, request

from ..live.health import Rule
from ..live.now import factory_history, now_data
from .jsonutil import json_response

bp = Blueprint("now", __name__, template_folder="templates")

_RULE_PARAMS = {"window": "window_s", "baseline_days": "baseline_days", "factor": "factor",
                "min_jump": "min_jump", "min_failures": "min_failures", "chronic": "chronic"}


@bp.route("/now")
def now_page() -> str:
    return render_template("now.html", page="now")


#: The largest number a parameter of /ui/api/now takes (seconds, days, factors, counts): ~3,000 years.
_LARGEST = 1e11


def _number(name: str) -> Optional[float]:
    raw = request.args.get(name)
    if raw is None or raw == "":
        return None
    value = float(raw)               # ValueError: answered 400 below
    if not 0 <= value <= _LARGEST:     # nan, inf and numbers no period could use
        raise ValueError(f"{name} must be a number from 0 to {_LARGEST:.0e}")
    return value


@bp.route("/ui/api/now")
def now_api() -> Response:
    try:
        stale = _number("stale")
        fields: Dict[str, float] = {}
        for param, field in _RULE_PARAMS.items():
            value = _number(param)
            if value is not None:
                fields[field] = int(value) if field == "min_failures" else value
        rule = Rule(**fields)  # type: ignore[arg-type]
    except ValueError as exc:
        return json_response({"error": f"bad query: {exc}"}, 400)
    return json_response(now_data(current_app.config["GWTRACE_STORE"], stale_s=stale, rule=rule))


@bp.route("/ui/api/factory-states")
def factory_states_api() -> Response:
    """Glideins idle, running and held per entry over the last ``hours`` (24), ``bucket`` seconds (3600) a
    point: the factory's Condor-G logs as backfilled."""
    import time

    try:
        hours = _number("hours") or 24.0
        bucket = int(_number("bucket") or 3600)
        if bucket < 60 or hours * 3600 / bucket > 2000:
            raise ValueError("bucket must be at least 60 s, and hours/bucket at most 2000 points")
    except ValueError as exc:
        return json_response({"error": f"bad query: {exc}"}, 400)
    return json_response(factory_history(current_app.config["GWTRACE_STORE"], time.time(), hours, bucket))
