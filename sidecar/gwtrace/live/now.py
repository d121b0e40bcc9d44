"""What is running now: the glideins alive per site/entry, from the store's live snapshots.

One function (``now_data``) makes what ``gwtrace now --format json`` prints
and ``/ui/api/now`` answers, so the page and the command cannot disagree.
Beside them, what the factory's own Condor-G logs say (``factory_now``):
glideins idle, running and held per entry, with held reasons, for every
backfilled factory, traced or not.
A glidein whose last snapshot (or heartbeat) is older than the timeout
(``--stale``, default 3x the interval its sidecar announced) is shown as
*stopped reporting*: its sidecar, node or network is gone or cut off, and its
real spans have not arrived either (they would have removed the snapshot).
"""

from __future__ import annotations

import time
from typing import Any, Dict, List, Optional

from gwtrace.factory import states
from gwtrace.live.health import Rule, health

#: A glidein is stale after this many of its announced intervals without a snapshot.
STALE_INTERVALS = 3.0
STOPPED = "stopped reporting"


def _glidein(row: Dict[str, Any], now_ns: int, stale_s: Optional[float]) -> Dict[str, Any]:
    timeout = stale_s if stale_s is not None else STALE_INTERVALS * row["interval_s"]
    silent = max(0.0, (now_ns - row["received_ns"]) / 1e9)
    stale = silent > timeout
    return {
        "key": row["key"], "uuid": row["glidein_uuid"], "site": row["site"], "entry": row["entry"],
        "frontend": row["frontend"], "host": row["host"], "trace_id": row["root_trace_id"],
        "state": STOPPED if stale else "alive", "stale": stale, "stale_after_s": timeout,
        "last_report_s": round(silent, 1),
        "phase": row["phase"], "phase_s": round(max(0, now_ns - row["phase_since_ns"]) / 1e9, 1),
        "age_s": round(max(0, now_ns - row["started_ns"]) / 1e9, 1) if row["started_ns"] else None,
        "open_spans": row["n_spans"],
        "jobs": [{"job_id": j["job_id"], "name": j["name"], "trace_id": j["trace_id"],
                  "running_s": round(max(0, now_ns - j["start_ns"]) / 1e9, 1)} for j in row["jobs"]],
    }


def _entries(glideins: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    groups: Dict[tuple, Dict[str, Any]] = {}
    for g in glideins:
        site, entry = g["site"] or "", g["entry"] or ""
        cell = groups.setdefault((site, entry), {"site": site, "entry": entry, "alive": 0, "stopped_reporting": 0,
                                                 "jobs_running": 0, "phases": {}})
        if g["stale"]:
            cell["stopped_reporting"] += 1
            continue
        cell["alive"] += 1
        cell["jobs_running"] += len(g["jobs"])
        cell["phases"][g["phase"]] = cell["phases"].get(g["phase"], 0) + 1
    return [groups[k] for k in sorted(groups)]


def now_data(store: Any, now: Optional[float] = None, stale_s: Optional[float] = None,
             rule: Optional[Rule] = None) -> Dict[str, Any]:
    """Glideins alive (and stopped reporting) per site/entry, and the sites' health lights."""
    now = time.time() if now is None else now
    now_ns = int(now * 1e9)
    glideins = [_glidein(row, now_ns, stale_s) for row in store.live_snapshots()]
    glideins.sort(key=lambda g: (g["site"] or "", g["entry"] or "", g["stale"], g["key"]))
    return {
        "now": now,
        "glideins": glideins,
        "entries": _entries(glideins),
        "totals": {"alive": sum(not g["stale"] for g in glideins), "stopped_reporting": sum(g["stale"] for g in glideins),
                   "jobs_running": sum(len(g["jobs"]) for g in glideins if not g["stale"])},
        "health": health(store, now, rule or Rule()),
        "factory": factory_now(store, now),
    }


def factory_now(store: Any, now: float) -> Dict[str, Any]:
    """Glideins idle, running and held per entry now, from the factory's Condor-G logs as backfilled
    (``factory/states.py``): what the factory knows of glideins that run no gwtrace, or have not started."""
    entries = states.now_by_entry(store.reader(), now)
    return {"entries": entries,
            "totals": {s: sum(e[s] for e in entries) for s in states.OPEN}}


def factory_history(store: Any, now: float, hours: float = 24.0, bucket_s: int = 3600) -> Dict[str, Any]:
    """Per entry, glideins idle, running and held at the end of each bucket of the last ``hours``."""
    until = int(now) // bucket_s * bucket_s + bucket_s
    since = until - int(hours * 3600)
    return {"bucket_s": bucket_s, "since": since, "until": until,
            "entries": states.series(store.reader(), since, until, bucket_s)}
