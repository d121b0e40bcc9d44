"""The job page: a user job's journey (submit, queue, holds, the glidein that ran it, the job's own
steps, exit) and why it waits, from ``gwtrace.journey`` as JSON for a static page.

``/job/<id>`` is a shell like every page (no data in it); ``/ui/api/job/<id>`` answers with the dict
``gwtrace job --format json --why`` prints.  Any id form ``gwtrace job`` takes works (a GlobalJobId's
``#`` is sent as ``%23``).
"""

from __future__ import annotations

import time

from flask import Blueprint, Response, current_app, render_template, request

from ..journey.view import find_jobs, journey
from ..journey.why import why
from ..analysis.resources import job_resources
from .jsonutil import json_response

bp = Blueprint("jobs", __name__, template_folder="templates")


@bp.route("/job/<path:job_id>")
def job_page(job_id: str) -> str:
    return render_template("job.html", page="job")


@bp.route("/ui/api/job/<path:job_id>")
def job_data(job_id: str) -> Response:
    store = current_app.config["GWTRACE_STORE"]
    now = float(request.args["now"]) if request.args.get("now", "").replace(".", "", 1).isdigit() else time.time()
    try:
        states = find_jobs(store, job_id)
    except ValueError as exc:
        return json_response({"error": str(exc)}, 400)
    except LookupError as exc:
        return json_response({"error": str(exc)}, 404)
    data = journey(store, states[0], now)
    data["why"] = why(store, states[0], now)
    data["others"] = [f"{s['cluster']}.{s['proc']}@{s['schedd']}" for s in states[1:]]
    data["resources"] = job_resources(store, states[0], now)
    return json_response(data)
