"""What jobs and glideins used, for people: the chart beside a trace, and the resource hints.

The store keeps the sidecar's samples per subject (``store.metrics``); here they become

* the chart's series (``chart``): CPU cores used (the slope of the cumulative
  ``process.cpu.time``, all modes summed: d cpu / dt between two samples),
  RSS and peak memory against ``request_memory``, and the node's load average;
* the resource hints of ``gwtrace analyze`` (``resource_hints``): jobs using
  more memory or more cores than they asked for (per owner, with the sites and
  the worst cases), memory growing steadily (a leak: a least-squares line
  through enough RSS samples that fits well), and glideins whose node's load
  says the machine is oversubscribed (load / the machine's cores).

What each costs is in the cost model's units (docs/analysis.md, "What a hint
costs"): capacity taken beyond the request, in canonical core-hours per day
(a core, or a 2 GB block of memory), is its own unit (``OVERUSE``), ranked on
its own; a glidein's cores waiting on an oversubscribed machine are pilot
time lost (``PILOT``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple

from .hints import OVERUSE, PILOT, Hint, Thresholds

#: a canonical unit of memory (docs/analysis.md): 2 GB
CANONICAL_MB = 2048.0
DAY_S = 86400.0
HOUR_S = 3600.0
#: the chart draws at most this many points a series (the waterfall is ~1000 px wide)
CHART_POINTS = 2000


# ------------------------------------------------------------------ the chart


def cores_used(cpu_series: Iterable[Dict[str, Any]]) -> List[List[float]]:
    """[[time_ns, cores]]: the CPU time of every mode summed at each sample, then its slope between samples.

    A sample that lacks a mode the others have takes that mode's last value; a counter that goes back (a
    process tree that lost a child) gives no negative cores: the step is skipped."""
    by_mode = [s["points"] for s in cpu_series]
    times = sorted({t for points in by_mode for t, _ in points})
    last = [None] * len(by_mode)
    cursor = [0] * len(by_mode)
    totals: List[Tuple[int, float]] = []
    for t in times:
        for i, points in enumerate(by_mode):
            while cursor[i] < len(points) and points[cursor[i]][0] <= t:
                last[i] = points[cursor[i]][1]
                cursor[i] += 1
        totals.append((t, sum(v for v in last if v is not None)))
    out = []
    for (t0, v0), (t1, v1) in zip(totals, totals[1:]):
        if t1 > t0 and v1 >= v0:
            out.append([t1, (v1 - v0) / ((t1 - t0) / 1e9)])
    return out


def _thin(points: List[List[float]], most: int = CHART_POINTS) -> List[List[float]]:
    """At most ``most`` points, keeping each stride's largest value (a peak must not vanish from a chart)."""
    if len(points) <= most:
        return points
    step = math.ceil(len(points) / most)
    return [max(points[at:at + step], key=lambda p: p[1]) for at in range(0, len(points), step)]


def chart(subject: Dict[str, Any], series: List[Dict[str, Any]]) -> Dict[str, Any]:
    """One subject's chart data: times in µs since the epoch (the waterfall's unit), memory in MB."""
    def of(name: str) -> List[Dict[str, Any]]:
        return [s for s in series if s["name"] == name]

    def points(name: str, scale: float = 1.0) -> List[List[float]]:
        merged = sorted((p for s in of(name) for p in s["points"]), key=lambda p: p[0])
        return _thin([[t // 1000, v * scale] for t, v in merged])

    cores = _thin([[t // 1000, v] for t, v in cores_used(of("process.cpu.time"))])
    return {
        "kind": subject["kind"], "job_id": subject.get("job_id"), "glidein": subject.get("glidein"),
        "owner": subject.get("owner"), "site": subject.get("site"), "host": subject.get("host"),
        "source": subject.get("source"), "trace_id": subject.get("trace_id"), "span_id": subject.get("span_id"),
        "request_cpus": subject.get("request_cpus"), "request_memory_mb": subject.get("request_memory_mb"),
        "machine_cores": subject.get("cores"),
        "cores": cores, "rss_mb": points("process.memory.usage", 1 / 1048576),
        "peak_mb": points("process.memory.peak", 1 / 1048576), "load": points("system.cpu.load_average.1m"),
    }


def charts(store: Any, *, trace_id: Optional[str] = None, job_id: Optional[str] = None,
           glideins: Iterable[str] = (), start_ns: Optional[int] = None, end_ns: Optional[int] = None,
           limit: int = 20) -> List[Dict[str, Any]]:
    """The charts of what a trace's (or a job's) subjects used: its jobs, then the glideins it ran in.

    ``start_ns``/``end_ns`` keep only subjects sampled while the trace or job ran (a job id is reused by every
    schedd)."""
    found: Dict[int, Dict[str, Any]] = {}
    if trace_id:
        found.update((s["id"], s) for s in store.metric_subjects(trace_id=trace_id, limit=limit))
    if job_id and not found:
        found.update((s["id"], s) for s in store.metric_subjects(job_id=job_id, limit=limit))
    for uuid in list(glideins)[:5]:
        found.update((s["id"], s) for s in store.metric_subjects(glidein=uuid, limit=limit) if s["kind"] == "glidein")
    subjects = [s for s in found.values()
                if (start_ns is None or s["last_ns"] >= start_ns) and (end_ns is None or s["first_ns"] <= end_ns)]
    subjects.sort(key=lambda s: (s["kind"] != "job", s["first_ns"]))
    return [chart(s, store.metric_series(s["id"])) for s in subjects[:limit]]


# ------------------------------------------------------------------ the hints


def _mb(value: Optional[float]) -> str:
    return "?" if value is None else f"{value:,.0f} MB"


def _period_days(rows: List[Dict[str, Any]]) -> float:
    """The group's own period (first to last sample, at least an hour), in days: "per day" is over it."""
    first = min(r["sampled_from_ns"] for r in rows)
    last = max(r["sampled_to_ns"] for r in rows)
    return max(HOUR_S, (last - first) / 1e9) / DAY_S


def _hours(row: Dict[str, Any]) -> float:
    return max(0.0, (row["sampled_to_ns"] - row["sampled_from_ns"]) / 1e9 / HOUR_S)


def _job(row: Dict[str, Any], **figures: Any) -> Dict[str, Any]:
    """A job as hint evidence: what names it (the ``glidein`` key is what the hint table prints) and its figures."""
    name = f"job {row.get('job_id') or '?'}" + (f" ({row['owner']})" if row.get("owner") else "") + \
        (f" at {row['site']}" if row.get("site") else "")
    return {"glidein": name, "trace_id": row.get("trace_id") or "", "job_id": row.get("job_id"),
            "glidein_uuid": row.get("glidein"), "site": row.get("site"), "entry": row.get("entry"), **figures}


def _sites(rows: List[Dict[str, Any]]) -> Dict[str, int]:
    counts: Dict[str, int] = defaultdict(int)
    for r in rows:
        counts[r.get("site") or "?"] += 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def _round_up(value: float, step: float) -> float:
    return math.ceil(value / step) * step


def _over_request(jobs: List[Dict[str, Any]], t: Thresholds, used: str, request: str,
                  is_over: Callable[[float, float], bool]) -> Iterator[Tuple[str, List[Dict[str, Any]], int]]:
    """Per owner with ``resource_min_jobs`` jobs or more over their request: (owner, those jobs most over first,
    how many of the owner's jobs were sampled). Why one: memory and cores are judged alike (a job counts as
    sampled when it has both the figure and the request), only the figure and the test differ."""
    by_owner: Dict[str, List[Dict[str, Any]]] = defaultdict(list)
    sampled: Dict[str, int] = defaultdict(int)
    for r in jobs:
        if r.get(request) and r.get(used) is not None:
            sampled[r.get("owner") or "?"] += 1
            if is_over(r[used], r[request]):
                by_owner[r.get("owner") or "?"].append(r)
    for owner, rows in by_owner.items():
        if len(rows) >= t.resource_min_jobs:
            rows.sort(key=lambda r: -(r[used] - r[request]))
            yield owner, rows, sampled[owner]


def _over_request_hint(kind: str, owner: str, rows: List[Dict[str, Any]], sampled: int, excess_h: float,
                       summary: str, action: str, suggested: Dict[str, Any],
                       glideins: List[Dict[str, Any]]) -> Hint:
    """An over-request hint: its cost is the over-use in the group's own period; its evidence counts and sites."""
    days = _period_days(rows)
    return Hint(kind=kind, scope={"owner": owner}, summary=summary, action=action,
                cost_per_day=excess_h / days, cost_unit=OVERUSE, period_days=days, count=len(rows),
                evidence={"jobs_over": len(rows), "jobs_sampled": sampled, "by_site": _sites(rows), **suggested},
                glideins=glideins)


def memory_over_request(jobs: List[Dict[str, Any]], t: Thresholds) -> List[Hint]:
    """Per owner: jobs whose peak memory passed ``request_memory`` (× ``memory_over_ratio``)."""
    out = []
    for owner, rows, sampled in _over_request(jobs, t, "peak_mb", "request_memory_mb",
                                              lambda peak, request: peak > request * t.memory_over_ratio):
        peaks = sorted(r["peak_mb"] for r in rows)
        wanted = _round_up(peaks[min(len(peaks) - 1, int(0.95 * len(peaks)))] * 1.1, 100)
        excess_h = sum((r["peak_mb"] - r["request_memory_mb"]) / CANONICAL_MB * _hours(r) for r in rows)
        worst = rows[0]
        out.append(_over_request_hint(
            "memory_over_request", owner, rows, sampled, excess_h,
            summary=f"{len(rows)} of {owner}'s {sampled} sampled job(s) used more memory than they requested "
                    f"(worst: {_mb(worst['peak_mb'])} peak for {_mb(worst['request_memory_mb'])} requested)",
            action=f"request_memory = {wanted:.0f} (MB; 10% over the 95th percentile of their peaks) in {owner}'s "
                   "submit files, or find what makes them grow",
            suggested={"suggested_request_memory_mb": wanted},
            glideins=[_job(r, peak_mb=round(r["peak_mb"]), request_memory_mb=r["request_memory_mb"]) for r in rows[:10]]))
    return out


def cores_over_request(jobs: List[Dict[str, Any]], t: Thresholds) -> List[Hint]:
    """Per owner: jobs that kept more cores busy than ``request_cpus`` (by ``cores_over`` at least)."""
    out = []
    for owner, rows, sampled in _over_request(jobs, t, "cores_used", "request_cpus",
                                              lambda cores, request: cores >= request + t.cores_over):
        used = sorted(r["cores_used"] for r in rows)
        wanted = max(1, math.ceil(used[min(len(used) - 1, int(0.9 * len(used)))] - 0.1))
        excess_h = sum((r["cores_used"] - r["request_cpus"]) * _hours(r) for r in rows)
        worst = rows[0]
        out.append(_over_request_hint(
            "cores_over_request", owner, rows, sampled, excess_h,
            summary=f"{len(rows)} of {owner}'s {sampled} sampled job(s) used more cores than they requested "
                    f"(worst: {worst['cores_used']:.1f} cores busy for request_cpus = {worst['request_cpus']:g})",
            action=f"request_cpus = {wanted} in {owner}'s submit files, or limit the job's threads to its request "
                   "(OMP_NUM_THREADS, the application's own option)",
            suggested={"suggested_request_cpus": wanted},
            glideins=[_job(r, cores_used=round(r["cores_used"], 2), request_cpus=r["request_cpus"],
                           cpu_efficiency=round(r["cpu_efficiency"], 2)) for r in rows[:10]]))
    return out


def leaks(jobs: List[Dict[str, Any]], fits: Dict[int, Dict[str, float]], t: Thresholds) -> List[Hint]:
    """Per owner: jobs whose RSS grows steadily: a line through ≥ ``leak_min_points`` samples with R² ≥
    ``leak_r2``, rising ≥ ``leak_mb_per_hour``. Two points always fit a line: they never make a leak."""
    by_owner: Dict[str, List[Tuple[Dict[str, Any], Dict[str, float]]]] = defaultdict(list)
    for r in jobs:
        fit = fits.get(r["id"])
        if fit is None or fit["n"] < max(3, t.leak_min_points):
            continue
        per_hour = fit["slope_mb_s"] * HOUR_S
        if fit["r2"] >= t.leak_r2 and per_hour >= t.leak_mb_per_hour:
            by_owner[r.get("owner") or "?"].append((r, {**fit, "mb_per_hour": per_hour}))
    out = []
    for owner, items in by_owner.items():
        items.sort(key=lambda item: -item[1]["mb_per_hour"])
        rows = [r for r, _ in items]
        days = _period_days(rows)
        # what the leak costs: the memory it added beyond the request, as over-use (none while under it)
        excess_h = sum(max(0.0, (r["peak_mb"] or 0) - (r.get("request_memory_mb") or math.inf)) / CANONICAL_MB
                       * _hours(r) for r in rows)
        r, fit = items[0]
        request = r.get("request_memory_mb")
        when = ""
        if request and fit["mb_per_hour"] > 0 and fit["max_mb"] < request:
            when = f"; at this rate it passes its request_memory ({_mb(request)}) in " \
                   f"{(request - fit['max_mb']) / fit['mb_per_hour']:.1f} h"
        out.append(Hint(
            kind="memory_leak", scope={"owner": owner},
            summary=f"memory grows steadily in {len(rows)} of {owner}'s job(s) (worst: +{fit['mb_per_hour']:,.0f} MB/h "
                    f"over {fit['n']} samples, R² {fit['r2']:.2f}, {_mb(fit['min_mb'])} → {_mb(fit['max_mb'])}){when}",
            action="look for a leak in the job (memory that is allocated per event or step and never freed); "
                   "until it is fixed, request_memory must cover the longest run, or the job is held (code 34)",
            cost_per_day=excess_h / days, cost_unit=OVERUSE, period_days=days, count=len(rows),
            evidence={"jobs": len(rows), "min_points": t.leak_min_points, "min_r2": t.leak_r2,
                      "min_mb_per_hour": t.leak_mb_per_hour},
            glideins=[_job(row, mb_per_hour=round(f["mb_per_hour"], 1), r2=round(f["r2"], 3), samples=f["n"],
                           rss_mb=[round(f["min_mb"]), round(f["max_mb"])]) for row, f in items[:10]]))
    return out


def oversubscribed(glideins: List[Dict[str, Any]], t: Thresholds) -> List[Hint]:
    """Per site: glideins whose node's mean load average passed ``load_per_core`` × the machine's cores."""
    by_site: Dict[str, List[Dict[str, Any]]] = defaultdict(list)
    for g in glideins:
        if not g.get("cores") or (g.get("load_points") or 0) < t.load_min_points:
            continue
        ratio = g["load_mean"] / g["cores"]
        if ratio >= t.load_per_core:
            by_site[g.get("site") or "?"].append({**g, "load_per_core": ratio})
    out = []
    for site, rows in by_site.items():
        rows.sort(key=lambda g: -g["load_per_core"])
        days = max(HOUR_S, (max(g["last_ns"] for g in rows) - min(g["first_ns"] for g in rows)) / 1e9) / DAY_S
        # a core of a machine loaded L per core runs 1/L of the time: the rest of the pilot's time is lost
        lost_h = sum((g["last_ns"] - g["first_ns"]) / 1e9 / HOUR_S * (1 - 1 / g["load_per_core"]) for g in rows)
        hosts = sorted({g.get("host") or "?" for g in rows})
        worst = rows[0]
        out.append(Hint(
            kind="oversubscribed_node", scope={"site": site},
            summary=f"{len(rows)} glidein(s) at {site} ran on machines loaded {worst['load_per_core']:.1f}× their "
                    f"cores (worst: load {worst['load_mean']:.1f} on {worst['cores']:g} cores, {worst.get('host') or '?'})",
            action=f"ask {site} about its slot layout: more slots (or glideins) than cores share these machines "
                   "(partitionable slots sized to the cores, or fewer glideins per node: GLIDEIN_CPUS)",
            cost_per_day=lost_h / days, cost_unit=PILOT, period_days=days, count=len(rows),
            evidence={"glideins": len(rows), "hosts": hosts[:10], "load_per_core_threshold": t.load_per_core},
            glideins=[{"glidein": g.get("glidein") or "?", "trace_id": g.get("trace_id") or "", "host": g.get("host"),
                       "load_mean": round(g["load_mean"], 2), "cores": g["cores"]} for g in rows[:10]]))
    return out


def resource_hints(store: Any, t: Optional[Thresholds] = None, *, since: Optional[float] = None,
                   until: Optional[float] = None, site: Optional[str] = None) -> List[Hint]:
    """Every resource hint the store's samples support in the window (epoch seconds), unranked."""
    t = t or Thresholds()
    start = int(since * 1e9) if since is not None else 0
    end = int(until * 1e9) if until is not None else 2**63 - 1
    jobs = [r for r in store.metric_peaks("job", start, end) if site is None or r.get("site") == site]
    fits = store.metric_rss_fits(max(3, t.leak_min_points), [r["id"] for r in jobs if r["rss_points"] >= 3])
    glideins = [g for g in store.metric_loads(start, end) if site is None or g.get("site") == site]
    return (memory_over_request(jobs, t) + cores_over_request(jobs, t) + leaks(jobs, fits, t)
            + oversubscribed(glideins, t))


# ------------------------------------------------------------------ one job


FIGURES = ("job_id", "glidein", "site", "source", "peak_mb", "request_memory_mb", "memory_ratio", "cpu_s",
           "cores_used", "request_cpus", "cpu_efficiency", "sampled_from_ns", "sampled_to_ns")


def job_resources(store: Any, state: Dict[str, Any], now: float, with_charts: bool = True) -> Dict[str, Any]:
    """What one job (a journey state) used: its charts (the job's, then its glideins' load) and its figures
    (peak memory against request_memory, CPU efficiency), for ``gwtrace job`` and the job page.

    Its samples are found by the journey's trace id (the job wrapper's span is in it), else by ``cluster.proc``
    sampled while the job lived (the same id is reused by every schedd)."""
    start = int(state["submitted"] * 1e9) if state.get("submitted") else None
    end = int(((state.get("ended") or now) + 600) * 1e9)
    job_id = f"{state['cluster']}.{state['proc']}"
    jobs = [s for s in store.metric_subjects(trace_id=state["trace_id"])] or \
        [s for s in store.metric_subjects(job_id=job_id)
         if (start is None or s["last_ns"] >= start) and s["first_ns"] <= end]
    figures = [_trusted({k: row.get(k) for k in FIGURES}, state.get("ad") or {})
               for row in store.metric_peaks(ids=[s["id"] for s in jobs])]
    if not with_charts:
        return {"figures": figures}
    found = [chart(s, store.metric_series(s["id"])) for s in jobs[:20]]
    for item in found:                      # the dashed request lines: the job ad's, where it has them
        trusted = _trusted({"peak_mb": None, "cores_used": None, "request_memory_mb": item["request_memory_mb"],
                            "request_cpus": item["request_cpus"]}, state.get("ad") or {})
        item["request_memory_mb"], item["request_cpus"] = trusted["request_memory_mb"], trusted["request_cpus"]
    glideins = sorted({s["glidein"] for s in jobs if s.get("glidein")})
    if glideins:
        found += charts(store, glideins=glideins, start_ns=start, end_ns=end)
    return {"charts": found, "figures": figures}


def _trusted(figures: Dict[str, Any], ad: Dict[str, Any]) -> Dict[str, Any]:
    """The job's requests from its ad (the schedd's word) over what the node said, and the ratios again: a
    worker node is not trusted to say what a job asked for. ``requests_from`` says whose they are."""
    figures["requests_from"] = "node"
    for key, attr in (("request_memory_mb", "RequestMemory"), ("request_cpus", "RequestCpus")):
        value = ad.get(attr)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            figures[key] = float(value)
            figures["requests_from"] = "job ad"
    memory, cpus = figures.get("request_memory_mb"), figures.get("request_cpus")
    figures["memory_ratio"] = figures["peak_mb"] / memory if figures.get("peak_mb") is not None and memory else None
    figures["cpu_efficiency"] = figures["cores_used"] / cpus if figures.get("cores_used") is not None and cpus else None
    return figures


def figure_lines(figures: List[Dict[str, Any]]) -> List[str]:
    """``gwtrace job``'s lines: peak memory against request_memory, CPU efficiency (cpu / (wall x request_cpus))."""
    lines = []
    for f in figures:
        where = f"job {f['job_id'] or '?'}" + (f" in glidein {f['glidein']}" if f.get("glidein") else "") + \
            (f" ({f['source']})" if f.get("source") else "")
        memory = f"peak memory {_mb(f['peak_mb'])}"
        if f.get("request_memory_mb"):
            memory += f" of {_mb(f['request_memory_mb'])} requested ({100 * f['memory_ratio']:.0f}%"
            memory += ", as the node said)" if f.get("requests_from") == "node" else ")"
            if f["memory_ratio"] > 1:
                memory += ": OVER the request"
        cpu = "CPU: ?"
        if f.get("cores_used") is not None:
            cpu = f"CPU: {f['cores_used']:.2f} cores busy on average"
            if f.get("request_cpus"):
                cpu += f", efficiency {100 * f['cpu_efficiency']:.0f}% of request_cpus = {f['request_cpus']:g}"
                if f["cpu_efficiency"] > 1.2:
                    cpu += ": MORE cores than requested"
        lines.append(f"{where}: {memory}; {cpu}")
    return lines
