"""GlideinWMS's own per-glidein figures, computed the way the factory does.

``extract_log_data`` gives the dict ``glideFactoryLogParser._extract_log_data``
returns for the same ``.out``; ``completed_stats`` applies the rules of
``glideFactoryMonitoring.condorLogSummary.get_completed_stats`` to it (the
``< 5 s`` rule, ``G = max(G, C)``, first-match ``(Real)`` Total against
normalized goodput, idle relative to Condor time).  Written from the
documented behaviour (docs/accounting.md), not copied; the tests compare both
functions with GlideinWMS's own on the same files.
"""

from typing import Any, Dict, List, Optional, Tuple

from .outfile import OutFile

STAT_NAMES = ("Total", "goodZ", "goodNZ", "badSignal", "badOther")


def extract_log_data(out: Optional[OutFile]) -> Dict[str, Any]:
    """The factory's view of a ``.out``: same keys, same presence rules."""
    if out is None or out.size < 10:
        return {"condor_started": 0, "glidein_duration": 0}
    data: Dict[str, Any] = {"condor_started": 1 if out.condor_started else 0}
    if out.validation_duration is not None:
        data["validation_duration"] = out.validation_duration
    if out.glidein_duration is not None:
        data["glidein_duration"] = out.glidein_duration
    if out.activations is not None:
        data["activations_claims"] = out.activations
    if out.condor_started and out.condor_duration is not None:
        data["condor_duration"] = out.condor_duration
        counts = out.stats.counts if out.stats else {}
        data["stats"] = {name: {"jobsnr": nr, "secs": secs} for name, (nr, secs) in counts.items()}
    return data


def _wasted_all() -> Dict[str, float]:
    return {"validation": 1000, "idle": 0, "nosuccess": 0, "badput": 1000}


def _stat(stats: Dict[str, Dict[str, int]], name: str, key: str, notes: List[str]) -> int:
    """A stats value; GlideinWMS raises KeyError when it is missing, we count 0 and say so."""
    try:
        return stats[name][key]
    except KeyError:
        note = f"no '{name}' in the stats block (GlideinWMS get_completed_stats raises KeyError here; taken as 0)"
        if note not in notes:
            notes.append(note)
        return 0


def completed_stats(
    log_data: Optional[Dict[str, Any]], running_time: Optional[int] = None, last_time: Optional[int] = None
) -> Tuple[Dict[str, Any], List[str]]:
    """Per-glidein figures as ``get_completed_stats`` computes them.

    ``running_time``/``last_time`` are the Condor-G 001 (last) and 005 epochs;
    without them the Condor-G duration is -1, as in the factory when a time is
    missing.  Returns the ``gwms`` dict of the record and notes on quirks hit.
    """
    notes: List[str] = []
    difftime = last_time - running_time if running_time is not None and last_time is not None else -1
    started = 0
    condor_duration = 0
    glidein_duration = difftime
    validation: Optional[int] = None
    if log_data is not None:
        started = log_data["condor_started"]
        glidein_duration = log_data.get("glidein_duration", glidein_duration)
        validation = log_data.get("validation_duration")
    jobsnr = total = goodput = terminated = 0
    wastemill: Dict[str, float] = _wasted_all()
    if started and log_data is not None:
        if "condor_duration" not in log_data:
            notes.append("Condor started but never ended (GlideinWMS raises KeyError here; Condor time taken as 0)")
        condor_duration = log_data.get("condor_duration") or 0
        glidein_duration = max(glidein_duration, condor_duration)
        if condor_duration >= 5:
            if validation is None:
                validation = difftime - condor_duration
            stats = log_data.get("stats", {})
            total = _stat(stats, "Total", "secs", notes)
            jobsnr = _stat(stats, "Total", "jobsnr", notes)
            goodput = min(_stat(stats, "goodZ", "secs", notes), total)
            terminated = min(goodput + _stat(stats, "goodNZ", "secs", notes), total)
            wastemill = {
                "validation": 1000.0 * validation / glidein_duration,
                "idle": 1000.0 * (condor_duration - total) / condor_duration,
                "nosuccess": 1000.0 * (total - goodput) / total if total > 0 else 0,
                "badput": 1000.0 * (glidein_duration - terminated) / glidein_duration,
            }
    gwms = {
        "duration": glidein_duration,
        "condor_started": bool(started),
        "condor_duration": condor_duration,
        "validation_duration": validation,
        "jobsnr": jobsnr,
        "jobs_duration": {"total": total, "goodput": goodput, "terminated": terminated},
        "wastemill": wastemill,
    }
    return gwms, notes
