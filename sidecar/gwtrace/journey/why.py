"""``gwtrace job ID --why``: why a job is idle or held, as ranked reasons with their evidence.

The rules (docs/journey.md): a hold is explained from its code and subcode
(``holds``); an idle job's wait is compared with the median wait of the
store's other jobs of the same owner and of the same requests; the glideins
at the sites it may run at (its ``DESIRED_Sites``) are counted from the
store's glidein records: running (HTCondor started, no end), validating
(started, HTCondor not yet), queued (submitted, not started), those that
failed in the last day and at which script, and whether any running one is
big enough; the negotiator's ``LastRejMatchReason`` is quoted.  Each
reason has a weight (its rank) and lines of evidence; what could not be
checked is listed as missing, never guessed.
"""

import math
import statistics
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional, Tuple

from . import match, table
from .holds import explain, measured_mb
from ..durations import wait_duration
from .view import current

RECENT_FAILURES_S = 86400       # "failed recently": ended within the last day
STALE_S = 7 * 86400             # a glidein record without an end, older than this, is not counted as alive
SAMPLE = 1000                   # the most recent jobs a median is taken over
SLOW_FACTOR = 2.0               # waiting longer than this many medians is "longer than usual"


def _reason(weight: int, title: str, evidence: List[str], advice: Optional[str] = None) -> Dict[str, Any]:
    return {"weight": weight, "title": title, "evidence": evidence, "advice": advice}


def when(epoch: Any, now: Optional[float] = None) -> str:
    """An epoch time for people: UTC date and time, and how long before ``now`` when given."""
    try:
        epoch = float(epoch)
    except (TypeError, ValueError):
        return str(epoch)
    text = datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    if now is not None and now >= epoch:
        text += f" ({wait_duration(now - epoch)} ago)"
    return text


def sampled_peak(store: Any, state: Dict[str, Any]) -> Optional[Tuple[int, str]]:
    """(MB, where) of the largest memory the sidecar sampled for the job (``store.metrics``: the cgroup's
    ``memory.peak`` where it had one, else the highest RSS), found by the job's trace; None without samples."""
    if store is None or not hasattr(store, "metric_subjects"):
        return None
    jobs = [s["id"] for s in store.metric_subjects(trace_id=state["trace_id"]) if s["kind"] == "job"]
    best: Optional[Tuple[int, str]] = None
    for row in store.metric_peaks(ids=jobs):
        if row.get("peak_mb") is not None and (best is None or row["peak_mb"] > best[0]):
            source = f", {row['source']}" if row.get("source") else ""
            best = (int(math.ceil(row["peak_mb"])), f"the sidecar's samples{source}")
    return best


def measured_peak(state: Dict[str, Any], store: Any = None) -> Optional[Tuple[int, str]]:
    """(MB, where it was measured) of the job's largest measured memory use: HTCondor's hold reason text
    ("Last measured usage: 2100 megabytes"), the runs' image-size events (006 MemoryUsage), or the sidecar's
    samples (``sampled_peak``) when ``store`` has them."""
    best: Optional[Tuple[int, str]] = None
    for _, _, _, _, text in state["holds"]:
        mb = measured_mb(text)
        if mb is not None and (best is None or mb > best[0]):
            best = (mb, "HTCondor's hold reason")
    for run in state["runs"]:
        if run.get("memory_mb") and (best is None or run["memory_mb"] > best[0]):
            best = (int(run["memory_mb"]), f"run {run['n']}'s MemoryUsage")
    sampled = sampled_peak(store, state)
    if sampled is not None and (best is None or sampled[0] > best[0]):
        best = sampled
    return best


def _held_for_memory(code: Any, sub: Any, text: str) -> bool:
    """Hold code 34 subcode 102, or a periodic hold on ``MemoryUsage > RequestMemory`` (its expression in the text)."""
    return (code == 34 and sub in (None, 102)) or ("MemoryUsage" in (text or "") and "RequestMemory" in (text or ""))


def _hold_reason(state: Dict[str, Any], now: float, store: Any = None) -> Dict[str, Any]:
    start, _, code, sub, text = state["holds"][-1]
    what = explain(code, sub, text)
    advice = what["suggestion"]
    peak = measured_peak(state, store)
    sampled = sampled_peak(store, state) if _held_for_memory(code, sub, text) else None
    if sampled is not None and peak == sampled:
        advice = (f"raise request_memory above the {sampled[0]} MB peak the sidecar sampled (e.g. request_memory = "
                  f"{int(math.ceil(sampled[0] * 1.2 / 100) * 100)}), or make the job use less; then resubmit")
    elif peak is not None and "request_memory" in advice and str(peak[0]) not in advice:
        advice += f" (its measured peak: {peak[0]} MB, from {peak[1]}: ask for more than that)"
    evidence = [f"held for {wait_duration(now - start)}" + (f", hold code {code}" if code is not None else "")
                + (f" subcode {sub}" if sub is not None else "") + f" ({what['label']}), since {when(start)}"]
    if text:
        evidence.append(f"HTCondor's reason: {text}")
    if sampled is not None:
        asked = state["ad"].get("RequestMemory")
        evidence.append(f"peak memory sampled by the sidecar: {sampled[0]} MB ({sampled[1]})"
                        + (f" against request_memory = {asked} MB" if isinstance(asked, (int, float)) else ""))
    if what.get("subcode_meaning"):
        evidence.append(f"subcode: {what['subcode_meaning']}")
    if code is None:
        evidence.append("the hold event carries no reason code (a cut-short 012 event, or an older HTCondor)")
    if len(state["holds"]) > 1:
        evidence.append(f"held {len(state['holds'])} times in all")
    return _reason(100, f"held: {what['meaning']}", evidence, advice)


def _waits(conn: Any, column: str, value: Any, key: str) -> List[int]:
    rows = conn.execute(f"SELECT first_start - submitted FROM jobs WHERE {column} = ? AND first_start IS NOT NULL"
                        f" AND submitted IS NOT NULL AND job_key != ? ORDER BY submitted DESC LIMIT {SAMPLE}",
                        (value, key)).fetchall()
    return [r[0] for r in rows if r[0] is not None and r[0] >= 0]


def _wait_reasons(conn: Any, state: Dict[str, Any], waited: float, missing: List[str]) -> List[Dict[str, Any]]:
    out = []
    key = table.job_key(state["schedd"], state["cluster"], state["proc"])
    groups: List[Tuple[str, str, Any]] = []
    if state.get("owner"):
        groups.append(("owner", f"of {state['owner']}", state["owner"]))
    else:
        missing.append("the job's owner is unknown (no job ad): no comparison with the owner's other jobs")
    req = table.requirements_key(state["ad"])
    if req:
        groups.append(("req_key", "with the same requests", req))
    else:
        missing.append("the job's requests (request_cpus/memory, DESIRED_Sites) are unknown: give the output of "
                       f"`condor_q -l {state['cluster']}.{state['proc']}` (or condor_history -l) with "
                       "gwtrace ingest --job-ads")
    for column, words, value in groups:
        waits = _waits(conn, column, value, key)
        if not waits:
            missing.append(f"no other job {words} has started yet in the store: no usual wait to compare with")
            continue
        median = statistics.median(waits)
        evidence = [f"waiting {wait_duration(waited)}; median wait of {len(waits)} job(s) {words}: {wait_duration(median)}"]
        if waited > SLOW_FACTOR * max(median, 60):
            out.append(_reason(40, f"waiting longer than usual for jobs {words}", evidence))
        else:
            out.append(_reason(10, f"a usual wait for jobs {words}", evidence))
    return out


def glidein_counts(conn: Any, sites: List[str], now: float) -> Dict[str, Dict[str, Any]]:
    """Per site (all sites when ``sites`` is empty): running, validating, queued glideins now; failures of the
    last day by script; the running ones' (cpus, memory_mb)."""
    where, args = "(ended IS NULL AND coalesce(started, submitted, 0) >= ?) OR ended >= ?", [now - STALE_S,
                                                                                            now - RECENT_FAILURES_S]
    if sites:
        where = f"site IN ({','.join('?' * len(sites))}) AND ({where})"
        args = list(sites) + args
    query = ("SELECT coalesce(site, 'unknown'), started, ended, status, json_extract(record, '$.condor_start'),"
             f" json_extract(record, '$.failed_script'), cpus, memory_mb FROM glideins WHERE {where}")
    out: Dict[str, Dict[str, Any]] = {s: _empty() for s in sites}
    for site, started, ended, status, condor, failed, cpus, memory in conn.execute(query, args):
        cell = out.setdefault(site, _empty())
        if ended is None:
            if condor is not None:
                cell["running"] += 1
                cell["slots"].append((cpus, memory))
            elif started is not None:
                cell["validating"] += 1
            else:
                cell["queued"] += 1
        elif ended >= now - RECENT_FAILURES_S and (failed or status == "ERROR"):
            script = failed or "unknown script"
            cell["failed"][script] = cell["failed"].get(script, 0) + 1
    return out


def _empty() -> Dict[str, Any]:
    return {"running": 0, "validating": 0, "queued": 0, "failed": {}, "slots": []}


def _fits(slots: List[Tuple[Any, Any]], ad: Dict[str, Any]) -> Optional[int]:
    """How many running glideins have the cpus and memory the job asks for (None: requests unknown)."""
    cpus, memory = ad.get("RequestCpus"), ad.get("RequestMemory")
    if not isinstance(cpus, (int, float)) and not isinstance(memory, (int, float)):
        return None
    return sum(1 for c, m in slots
               if (not isinstance(cpus, (int, float)) or c is None or c >= cpus)
               and (not isinstance(memory, (int, float)) or m is None or m >= memory))


def _glidein_reasons(conn: Any, state: Dict[str, Any], now: float, missing: List[str],
                     sized: bool = False) -> List[Dict[str, Any]]:
    """``sized``: a request no glidein could satisfy was already said (``_request_reasons``): not again."""
    ad = state["ad"]
    sites = table.sites_of(ad)
    if not sites:
        missing.append("the job's ad has no DESIRED_Sites: glideins are counted at every site")
    if conn.execute("SELECT 1 FROM glideins LIMIT 1").fetchone() is None:
        missing.append("the store holds no glidein records (gwtrace ingest --factory-logs, or traced glideins)")
        return []
    counts = glidein_counts(conn, sites, now)
    where = ", ".join(sites) if sites else "any site"
    running = sum(c["running"] for c in counts.values())
    validating = sum(c["validating"] for c in counts.values())
    queued = sum(c["queued"] for c in counts.values())
    failed: Dict[str, int] = {}
    for cell in counts.values():
        for script, n in cell["failed"].items():
            failed[script] = failed.get(script, 0) + n
    lines = [f"{site}: {c['running']} running, {c['validating']} validating, {c['queued']} queued, "
             f"{sum(c['failed'].values())} failed in the last day" for site, c in sorted(counts.items())][:10]
    out = []
    matched = [] if state["runs"] else ["no glidein has run this job yet (no execute event)"]
    if running == 0:
        out.append(_reason(80, f"no glidein is running at {where}", lines + matched,
                           "the frontend may not be asking for glideins there, or the factory's entries are "
                           "failing: see the failures below, or widen DESIRED_Sites"))
    else:
        fit = _fits([s for c in counts.values() for s in c["slots"]], ad)
        if fit == 0 and not sized:
            out.append(_reason(90, f"none of the {running} running glidein(s) at {where} is big enough",
                               lines + matched + [f"the job asks for {ad.get('RequestCpus', '?')} cpu(s), "
                                        f"{ad.get('RequestMemory', '?')} MB"],
                               "ask for less (request_memory / request_cpus) or wait for larger glideins"))
        elif not state["runs"] and not (fit == 0 and sized):
            fits = "" if fit is None else f" ({fit} with enough cpus and memory)"
            out.append(_reason(60, f"{running} glidein(s) are running at {where}{fits} but none has run this job",
                               lines + matched,
                               "they may be busy with other jobs, or the job's requirements exclude them"))
    if validating:
        out.append(_reason(30, f"{validating} glidein(s) at {where} are still validating", lines[:3]))
    if queued and not running:
        out.append(_reason(25, f"{queued} glidein(s) for {where} are queued at the factory or the site", lines[:3]))
    if failed:
        top = sorted(failed.items(), key=lambda item: -item[1])
        total = sum(failed.values())
        out.append(_reason(70 if total > running else 35,
                           f"{total} glidein(s) at {where} failed in the last day",
                           [f"{n} at {script}" for script, n in top[:5]],
                           "a site problem, not yours: the factory operators see it too"))
    return out


def _history_reasons(state: Dict[str, Any], now: float) -> List[Dict[str, Any]]:
    out = []
    ad = state["ad"]
    if ad.get("LastRejMatchReason"):
        out.append(_reason(50, "the negotiator could not match it last time",
                           [f"LastRejMatchReason: {ad['LastRejMatchReason']}"]
                           + ([f"at {when(ad['LastRejMatchTime'], now)}"] if ad.get("LastRejMatchTime") else [])))
    ended = [r for r in state["runs"] if r["end_reason"] not in (None, "terminated")]
    if ended:
        last = ended[-1]
        where = last["glidein"].get("host") or last.get("slot") or "?"
        out.append(_reason(45, f"it ran {len(state['runs'])} time(s) already; the last run ended: {last['end_reason']}",
                           [f"run {last['n']} on {where}"]
                           + [text for _, text in state["notes"][-3:]]))
    return out


def _where(sites: List[str]) -> str:
    return ", ".join(sites) if sites else "any site"


def _blocking_reason(item: Dict[str, Any], where: str, peak: Optional[Tuple[int, str]]) -> Dict[str, Any]:
    """One request no glidein could satisfy, in plain words, with what to change."""
    kind, count = item["kind"], item["count"]
    seen = f"{count} glidein(s) seen at {where} in the last day"
    if kind in match.UNITS:
        unit, asked, best, knob = match.UNITS[kind], item["asked"], item["best"], item["knob"]
        evidence = [f"the job asks for {asked} {unit} ({knob}); the largest of the {seen} offered {best} "
                    + {"memory": "MB"}.get(kind, unit)]
        advice = f"ask for at most {best} (set {knob} = {best} in the submit file)"
        if kind == "memory" and peak is not None:
            evidence.append(f"its measured peak: {peak[0]} MB (from {peak[1]})")
            if peak[0] >= best:
                advice = (f"it needs more than the {best} MB glideins there offer: add sites with bigger glideins to "
                          "DESIRED_Sites, or make the job use less memory")
            else:
                advice = (f"lower {knob} to between {peak[0]} MB (its measured peak) and {best} MB "
                          f"(e.g. {knob} = {min(best, int(peak[0] * 1.2) + 1)})")
        elif best == 0:
            advice = f"none offered any: drop {knob}, or add sites that offer them to DESIRED_Sites"
        if "DESIRED_Sites" not in advice:
            advice += ", or widen DESIRED_Sites"
        return _reason(95, f"no glidein at {where} offered {asked} {unit} in the last day", evidence, advice)
    if kind == "lifetime":
        evidence = [f"the job expects to run {wait_duration(item['asked'])} ({item['attr']}); the {item['count']} "
                    f"glidein(s) alive at {where} now have at most {wait_duration(item['best'])} of lifetime left "
                    "(started + GLIDEIN_Max_Walltime)"]
        return _reason(92, f"no glidein alive at {where} has {wait_duration(item['asked'])} of lifetime left", evidence,
                       f"if the job is shorter, lower {item['attr']}; else split it into shorter jobs")
    evidence = [f"false on {item['false']} of the {seen}"
                + (f", undefined on {item['undefined']} (they do not advertise what it uses)"
                   if item["undefined"] else "")]
    return _reason(93, f"no glidein at {where} satisfies its requirement `{item['clause']}`", evidence,
                   "change or drop this clause of requirements in the submit file "
                   "(`condor_q -better-analyze` shows the same against the pool's slots)")


def _request_reasons(conn: Any, state: Dict[str, Any], now: float, missing: List[str],
                     store: Any = None) -> List[Dict[str, Any]]:
    """The job's requests and Requirements, evaluated with HTCondor's ClassAd bindings against what the glideins
    seen at its sites in the last day offered (``match``): each one no glidein could satisfy."""
    ad = state["ad"]
    if not any(k in ad for k in ("Requirements", "RequestCpus", "RequestMemory", "RequestGpus")):
        return []
    sites = table.sites_of(ad)
    where = _where(sites)
    glideins = match.offers(conn, sites, now, RECENT_FAILURES_S)
    if not glideins:
        missing.append(f"no glidein record shows a glidein at {where} whose HTCondor ran in the last day: the job's "
                       "requests could not be compared with what glideins offer")
        return []
    try:
        result = match.compare(ad, glideins, now)
    except RuntimeError as err:
        missing.append(str(err))
        return []
    peak = measured_peak(state, store)
    out = [_blocking_reason(item, where, peak) for item in result["blocking"]]
    for clause in result["unchecked"]:
        missing.append(f"its requirement `{clause}` uses attributes the glidein records do not have (undefined on all "
                       f"{result['count']}): `condor_q -better-analyze {state['cluster']}.{state['proc']}` checks it")
    if result["wall"] is not None and not result["lifetimes_known"]:
        missing.append(f"no glidein alive at {where} has a known GLIDEIN_Max_Walltime: the job's "
                       f"{result['wall'][0]} was not compared with their lifetime left")
    return out


def why(store: Any, state: Dict[str, Any], now: float) -> Dict[str, Any]:
    """Ranked reasons (highest weight first) and the evidence that is missing."""
    now_state = current(state, now)
    missing: List[str] = []
    reasons: List[Dict[str, Any]] = []
    if state["status"] == "held" and state["holds"]:
        reasons.append(_hold_reason(state, now, store))
    elif state["status"] == "idle":
        store.refresh_glidein_records()   # records of traced glideins whose spans arrived since
        conn = store.reader()
        reasons += _wait_reasons(conn, state, now_state["for_s"] or 0, missing)
        requests = _request_reasons(conn, state, now, missing, store)
        reasons += requests
        reasons += _glidein_reasons(conn, state, now, missing, sized=bool(requests))
        reasons += _history_reasons(state, now)
        if "LastRejMatchReason" not in state["ad"]:
            missing.append("no LastRejMatchReason in the job's ad (the negotiator's last word on it): give the output "
                           f"of `condor_q -l {state['cluster']}.{state['proc']}` with gwtrace ingest --job-ads")
    else:
        reasons.append(_reason(0, f"the job is not waiting: it is {state['status']}", []))
    reasons.sort(key=lambda r: -r["weight"])
    for rank, reason in enumerate(reasons, 1):
        reason["rank"] = rank
    return {"current": now_state, "reasons": reasons, "missing": missing}
