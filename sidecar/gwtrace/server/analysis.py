"""Analysis pages: where glidein time goes per entry or site, the ranked hints, the outliers.

One code path with ``gwtrace analyze``: the JSON is ``analysis.report.analysis_body``
(what ``gwtrace analyze --format json`` prints) over the records the store keeps
(``TraceStore.glidein_records``, what the CLI reads by default), and the charts
are drawn by the same functions as ``--plot DIR`` (``analysis/plots.py``), into
SVG answers.

Each mark of a chart (bar segment, histogram bin, failure-rate point) is an SVG
hyperlink to the glideins behind it (``/glideins?...``, with the filters of
``record_filter``). To keep those links clickable the page shows the chart as
inline SVG, not as an ``<img>`` (whose links are dead) nor an ``<object>``
(which the strict CSP's ``object-src 'none'`` forbids, and which could not send
the bearer token): ``analysis.js`` fetches it with the token, parses it with
``DOMParser`` as XML, keeps only drawing elements and links into this server,
and inserts it; nothing in it can run.
"""

from __future__ import annotations

import io
from typing import Any, Callable, Dict, List, Optional
from urllib.parse import urlencode

from flask import Blueprint, Response, current_app, render_template, request

from ..analysis.report import analysis_body
from ..analysis.hints import Thresholds, rank_dicts
from ..analysis.resources import resource_hints
from ..analysis.outliers import MIN_EXTRA, outliers
from ..analysis.percentiles import span_percentiles
from ..analysis.phases import phases
from ..analysis.plots import CHARTS, ChartLinks, kind_seconds
from ..analysis.stats import DAY, ORDER, PhaseCells, phase_table, script_table, trends
from ..store import TraceStore
from .filters import BadQuery, query
from .jsonutil import gc_paused, json_response

bp = Blueprint("analysis", __name__, template_folder="templates")
BY = ("entry", "site")
FILTERS = ("since", "until", "site", "entry", "frontend")
Record = Dict[str, Any]


def _store() -> TraceStore:
    return current_app.config["GWTRACE_STORE"]


def analysis_query() -> Dict[str, Any]:
    """The accounting page's filters (since/until/site/entry/frontend), ``by`` (entry|site) and thresholds."""
    q = query()
    q["by"] = request.args.get("by") or "entry"
    if q["by"] not in BY:
        raise BadQuery(f"by must be one of {', '.join(BY)}")
    try:
        q["thresholds"] = Thresholds.parse(request.args.getlist("threshold"))
    except ValueError as exc:
        raise BadQuery(str(exc)) from None
    return q


def _records(q: Dict[str, Any]) -> List[Any]:
    """The selected glideins' analysis summaries (``analysis/summary.py``), what ``gwtrace analyze`` reads."""
    with gc_paused():
        return list(_store().glidein_summaries(q["since"], q["until"], q["site"], q["entry"], q["frontend"]))


def _bad(exc: Exception) -> Response:
    return json_response({"error": str(exc)}, 400)


# ---------------------------------------------------------------- pages


@bp.route("/analysis")
def analysis_page() -> str:
    return render_template("analysis.html", page="analysis")


@bp.route("/hints")
def hints_page() -> str:
    return render_template("hints.html", page="hints")


@bp.route("/outliers")
def outliers_page() -> str:
    return render_template("outliers.html", page="outliers")


# ------------------------------------------------------------------ JSON


@bp.route("/ui/api/analysis")
def analysis() -> Response:
    """``gwtrace analyze --by BY --format json`` over the same filters."""
    try:
        q = analysis_query()
    except BadQuery as exc:
        return _bad(exc)
    return json_response(analysis_body(_records(q), q["by"], q["thresholds"]))


@bp.route("/ui/api/hints")
def hints() -> Response:
    """``gwtrace analyze --hints --format json``."""
    try:
        q = analysis_query()
    except BadQuery as exc:
        return _bad(exc)
    body = analysis_body(_records(q), q["by"], q["thresholds"], hints_only=True)
    # what the sidecars sampled: jobs over their requests, leaks, oversubscribed nodes (analysis/resources.py)
    extra = resource_hints(_store(), q["thresholds"], since=q["since"], until=q["until"], site=q["site"])
    if extra:
        body["hints"] = rank_dicts(body["hints"] + [h.to_dict() for h in extra])
    return json_response(body)


@bp.route("/ui/api/outliers")
def outlier_list() -> Response:
    """``gwtrace analyze --outliers --format json``."""
    try:
        q = analysis_query()
    except BadQuery as exc:
        return _bad(exc)
    return json_response({"outliers": outliers(_records(q)), "min_extra_s": MIN_EXTRA})


@bp.route("/ui/api/percentiles/<trace_id>")
def percentiles(trace_id: str) -> Response:
    """Each span of a glidein's trace against the same phase at the same entry (``analysis/percentiles.py``)."""
    try:
        spans = _store().get_trace(trace_id)
    except ValueError as exc:
        return _bad(exc)
    if not spans:
        return json_response({"error": f"no trace {trace_id}"}, 404)
    wanted = spans[0]["trace_id"]
    entry = _store().glidein_entry(wanted)
    group = list(_store().glidein_records(entry=entry)) if entry else []
    own = next((r for r in group if r.get("trace_id") == wanted), None)
    if own is None:
        return json_response({"entry": None, "spans": {},
                              "reason": "no glidein record with an entry for this trace: nothing to compare with"})
    return json_response({"entry": entry, "spans": span_percentiles(spans, own, group)})


# ---------------------------------------------------------------- charts


class PageLinks(ChartLinks):
    """Chart marks link to the ``/glideins`` page with the page's filters and the mark's own."""

    def __init__(self, q: Dict[str, Any]) -> None:
        self.base = {k: str(q[k]) for k in FILTERS if q.get(k) is not None}

    def _url(self, **extra: str) -> str:
        return "/glideins?" + urlencode({**self.base, **extra})

    def bar(self, by: str, group: str, kind: str) -> Optional[str]:
        return None if group == "unknown" else self._url(**{by: group, "phase": kind})

    def bin(self, kind: str, low: float, high: float) -> Optional[str]:
        return self._url(phase=kind, min_seconds=repr(low), max_seconds=repr(high))

    def point(self, site: str, day: int) -> Optional[str]:
        return None if site == "unknown" else self._url(site=site, failed="1", day=str(day))


class LazyReport(dict):
    """``report_of``'s parts, each computed when a chart first asks for it (a chart needs one part, or none)."""

    def __init__(self, records: List[Record], by: str) -> None:
        super().__init__()
        self.records, self.by = records, by

    def __missing__(self, key: str) -> Any:
        parts = {"phases": lambda: phase_table(self.records, self.by), "scripts": lambda: script_table(self.records),
                 "trends": lambda: trends(self.records),
                 "lengths": lambda: PhaseCells(self.by).feed(self.records).lengths()}
        self[key] = parts[key]()
        return self[key]


@bp.route("/ui/api/analysis/<name>.svg")
def chart(name: str) -> Response:
    """One chart of ``gwtrace analyze --plot`` as SVG, its marks linked to the glideins behind them."""
    if name not in CHARTS:
        return json_response({"error": f"no chart {name!r} (charts: {', '.join(CHARTS)})"}, 404)
    try:
        q = analysis_query()
    except BadQuery as exc:
        return _bad(exc)
    records = _records(q)
    out = io.BytesIO()
    try:
        CHARTS[name](LazyReport(records, q["by"]), out, "svg", PageLinks(q))
    except ValueError as exc:  # no matplotlib on this server: the page says so in one line
        return json_response({"error": str(exc)}, 501)
    return Response(without_inline_style(out.getvalue()), mimetype="image/svg+xml")


SVG_NS, XLINK_NS = "http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"


def without_inline_style(svg: bytes) -> bytes:
    """The same picture with matplotlib's ``style="..."`` as SVG presentation attributes, and no ``<style>``.

    Why: the page shows the chart inline, and the UI's CSP (``style-src 'self'``) refuses inline styles, even
    in a document parsed by ``DOMParser``; presentation attributes (``fill="#fff"``) are not styles to the CSP
    and draw the same. The one ``<style>`` rule matplotlib writes (line joins and caps) goes on the root.
    """
    from xml.etree import ElementTree as ET

    ET.register_namespace("", SVG_NS)
    ET.register_namespace("xlink", XLINK_NS)
    root = ET.fromstring(svg)
    for parent in list(root.iter()):
        for child in list(parent):
            if child.tag in (f"{{{SVG_NS}}}style", f"{{{SVG_NS}}}metadata"):
                parent.remove(child)
    root.set("stroke-linejoin", "round")
    root.set("stroke-linecap", "butt")
    for node in root.iter():
        style = node.attrib.pop("style", None)
        for declaration in (style or "").split(";"):
            key, _, value = declaration.partition(":")
            if key.strip() and value.strip():
                node.set(key.strip(), value.strip())
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


# ----------------------------------------------- filters of /glideins


def _number(name: str) -> Optional[float]:
    text = request.args.get(name)
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise BadQuery(f"{name} must be a number of seconds, not {text!r}") from None


def _phase_seconds(rec: Record, phase: str) -> float:
    """Seconds in a phase kind (``script``: all scripts) or one named phase (``script:<id>``)."""
    if ":" in phase:
        return sum(p.seconds for p in phases(rec) if p.name == phase)
    return kind_seconds(rec).get(phase, 0.0)


def record_filter() -> Optional[Callable[[Record], Optional[float]]]:
    """The analysis links' filters: ``phase`` (with time in it; ``min_seconds``/``max_seconds`` bound that time,
    at least 1 s, as the histograms count it), ``failed`` (1 or 0), ``day`` (UTC midnight, epoch: the day
    the glidein started, else ended, as the trends count it) and ``script_failed`` (that script failed in it,
    as the failing-scripts table counts).

    The predicate answers None for a record left out, else the seconds in ``phase`` (0.0 without one).
    """
    phase = request.args.get("phase") or None
    low, high = _number("min_seconds"), _number("max_seconds")
    failed, day = request.args.get("failed") or None, request.args.get("day") or None
    script = request.args.get("script_failed") or None
    if phase is not None and phase not in ORDER and not phase.startswith("script:"):
        raise BadQuery(f"phase must be one of {', '.join(ORDER)} or script:<id>")
    if (low is not None or high is not None) and phase is None:
        raise BadQuery("min_seconds and max_seconds need a phase")
    if failed is not None and failed not in ("0", "1"):
        raise BadQuery("failed must be 1 or 0")
    if day is not None and not day.isdigit():
        raise BadQuery("day must be the epoch of a UTC midnight")
    if phase is None and failed is None and day is None and script is None:
        return None

    def keep(rec: Record) -> Optional[float]:
        if failed is not None and (rec.get("status") == "ERROR") != (failed == "1"):
            return None
        if script is not None and not any(r.get("id") == script and r.get("status") == "ERROR"
                                          for r in rec.get("scripts") or []):
            return None
        if day is not None:
            when = rec.get("started") if rec.get("started") is not None else rec.get("ended")
            if when is None or int(when // DAY) * DAY != int(day):
                return None
        if phase is None:
            return 0.0
        seconds = _phase_seconds(rec, phase)
        counted = max(seconds, 1.0)
        if seconds <= 0 or (low is not None and counted < low) or (high is not None and counted >= high):
            return None
        return seconds

    return keep
