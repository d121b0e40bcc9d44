"""Accounting pages: pilot time by category over time, by site/entry/frontend, and the glideins behind it.

The numbers come from the glidein records the store keeps at ingest
(``store/glideins.py``): the same ones, the same code, as ``gwtrace account``
and ``gwtrace glideins``.  The chart is drawn on the server by matplotlib
(``factory/account_plot.py``) and fetched by the page like any data (so a
server token covers it too); the page shows it as an image, where nothing in
it can run.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Dict, Optional

from flask import Blueprint, Response, current_app, render_template, request

from ..factory.account import BUCKETS, EntryTotals
from ..factory.account_plot import stacked_area
from ..factory.account_report import body_of
from ..factory.canonical import CATEGORIES
from ..store import TraceStore
from .analysis import record_filter
from .filters import GROUPS, BadQuery, query
from .glidein_list import BadPage, filtered_page, paging
from .jsonutil import json_response

bp = Blueprint("accounting", __name__, template_folder="templates")
MAX_GLIDEINS = 5000


def _store() -> TraceStore:
    return current_app.config["GWTRACE_STORE"]


def _filters(q: Dict[str, Any]) -> Dict[str, Optional[str]]:
    return {k: q[k] for k in GROUPS}


def accounting_data(store: TraceStore, q: Dict[str, Any]) -> Dict[str, Any]:
    """What ``gwtrace account --format json`` prints for the same query (the same ``body_of``)."""
    series = store.glidein_series(BUCKETS[q["bucket"]], q["by"], q["since"], q["until"], **_filters(q))
    totals: Dict[str, EntryTotals] = {}
    for name, figures in store.glidein_gwms(q["by"], q["since"], q["until"], **_filters(q)):
        totals.setdefault(name, EntryTotals()).add(figures)
    return body_of(series, totals, q["by"],
                   {"bucket": q["bucket"], "by": q["by"], "since": q["since"], "until": q["until"]})


@bp.route("/accounting")
def accounting_page() -> str:
    return render_template("accounting.html", page="accounting")


@bp.route("/glideins")
def glideins_page() -> str:
    return render_template("glideins.html", page="glideins")


@bp.route("/ui/api/accounting")
def accounting() -> Response:
    try:
        q = query()
    except BadQuery as exc:
        return json_response({"error": str(exc)}, 400)
    return json_response(accounting_data(_store(), q))


@bp.route("/ui/api/accounting.svg")
def accounting_svg() -> Response:
    try:
        q = query()
    except BadQuery as exc:
        return json_response({"error": str(exc)}, 400)
    rows = accounting_data(_store(), q)["series"]
    try:
        svg = _draw(rows, f"pilot time by category, canonical hours per {q['bucket']}", BUCKETS[q["bucket"]])
    except ValueError as exc:  # no matplotlib on this server: the page says so in one line
        return json_response({"error": str(exc)}, 501)
    return Response(svg, mimetype="image/svg+xml")


def _draw(rows: Any, title: str, width: int) -> bytes:
    handle, path = tempfile.mkstemp(suffix=".svg")
    os.close(handle)
    try:
        stacked_area(rows, path, title, width)
        with open(path, "rb") as f:
            return f.read()
    finally:
        os.unlink(path)


def _glidein_row(rec: Dict[str, Any]) -> Dict[str, Any]:
    canon = rec.get("canonical") or {}
    return {
        "trace_id": rec.get("trace_id"), "cluster": rec.get("cluster"), "proc": rec.get("proc"),
        "schedd": rec.get("schedd"), "site": rec.get("site"), "entry": rec.get("entry"),
        "frontend": rec.get("frontend"), "started": rec.get("started"), "ended": rec.get("ended"),
        "status": rec.get("status"), "failed_script": rec.get("failed_script"),
        "incomplete": rec.get("incomplete"), "cpus": rec.get("cpus"), "jobs": len(rec.get("jobs") or []),
        "canonical_hours": {c: round(canon.get(c, 0.0) / 3600.0, 2) for c in CATEGORIES + ("total",)},
    }


@bp.route("/ui/api/glidein-records")
def glidein_records() -> Response:
    """The glideins behind a number, a page at a time (``glidein_list``): the same filters, optionally only
    those with time in one category, or those behind a mark of an analysis chart (``analysis.record_filter``:
    phase, its time, failed, day); sorted, counted."""
    try:
        q = query()
        p = paging()
    except (BadQuery, BadPage) as exc:
        return json_response({"error": str(exc)}, 400)
    category = request.args.get("category") or None
    if category is not None and category not in CATEGORIES:
        return json_response({"error": f"category must be one of {', '.join(CATEGORIES)}"}, 400)
    try:
        keep = record_filter()
    except BadQuery as exc:
        return json_response({"error": str(exc)}, 400)
    if keep is None:
        total, records = _store().glidein_page(
            sort=p["sort"], descending=p["descending"], offset=(p["page"] - 1) * p["per_page"], limit=p["per_page"],
            status=p["status"], incomplete=p["incomplete"], category=category, since=q["since"], until=q["until"],
            **_filters(q))
        found = [_glidein_row(rec) for rec in records]
    else:
        total, page = filtered_page(_store().glidein_records(q["since"], q["until"], **_filters(q)), keep, p,
                                    category)
        phase = bool(request.args.get("phase"))
        found = [{**_glidein_row(rec), **({"phase_seconds": seconds} if phase else {})} for rec, seconds in page]
    return json_response({"glideins": found, "total": total, "page": p["page"], "per_page": p["per_page"],
                          "pages": max(1, -(-total // p["per_page"])), "sort": p["sort"],
                          "order": "desc" if p["descending"] else "asc",
                          "truncated": p["page"] * p["per_page"] < total, "limit": p["per_page"]})
