"""One job's journey as a JSON-able dict, folded from its events (and its ad).

Why a plain dict: it is stored as the job's row in the store and read back
by the next incremental ingest, which folds only the new events into it.
Times are epoch seconds; an interval whose end is ``None`` is still open.

State keys: ``cluster proc schedd submitted status last ended``, ``idle``
(list of [start, end]), ``holds`` ([start, end, code, subcode, reason]),
``runs`` (dicts: n, start, end, end_reason, host, slot, glidein, memory_mb,
disconnects [[start, end, reason]], transfers [[direction, queued, start, end]]),
``exit`` ({code|signal}), ``aborted`` (reason), ``notes`` ([time, text]) and
``ad`` (the job ad attributes kept, ``AD_KEYS``).
"""

import re
import zlib
from typing import Any, Dict, List, Optional

#: Job ad attributes the journey and --why use (compared case-insensitively).
AD_KEYS = ("TraceParent", "GlobalJobId", "Owner", "QDate", "JobStatus", "EnteredCurrentStatus",
           "DESIRED_Sites", "Requirements", "RequestCpus", "RequestMemory", "RequestDisk", "RequestGpus",
           "LastRejMatchReason", "LastRejMatchTime", "HoldReason", "HoldReasonCode", "HoldReasonSubCode",
           "NumShadowStarts", "LastRemoteHost", "RemoteHost", "AccountingGroup",
           # what request expressions use, and the job's expected wall time (--why compares it with glideins)
           "ImageSize", "MemoryUsage", "ResidentSetSize", "DiskUsage", "MaxWallTimeMins", "MaxWallTime",
           "JOB_EXPECTED_MAX_LIFETIME")
_AD_LOWER = {k.lower(): k for k in AD_KEYS}
_GLIDEIN_PREFIX = "match_exp_job_glidein_"
_SLOT_GLIDEIN = re.compile(r"^[^@]+@(?P<name>[^@]+)@(?P<host>.+)$")
_ALIAS = re.compile(r"alias=([^&>]+)")

#: JobStatus codes of an ad, as the journey's status words.
JOB_STATUS = {1: "idle", 2: "running", 3: "removed", 4: "completed", 5: "held", 6: "transferring_output",
              7: "suspended"}


def new_state(cluster: int, proc: int, schedd: str = "") -> Dict[str, Any]:
    """A job seen for the first time."""
    return {"cluster": cluster, "proc": proc, "schedd": schedd, "submitted": None, "status": "unknown",
            "last": None, "ended": None, "idle": [], "holds": [], "runs": [], "exit": None,
            "aborted": None, "notes": [], "ad": {}}


def keep_ad(state: Dict[str, Any], ad: Dict[str, Any]) -> None:
    """Keep the attributes of ``AD_KEYS`` and every ``MATCH_EXP_JOB_GLIDEIN_*`` of a job ad."""
    kept = state["ad"]
    for key, value in ad.items():
        lower = key.lower()
        if lower in _AD_LOWER:
            kept[_AD_LOWER[lower]] = _plain(value)
        elif lower.startswith(_GLIDEIN_PREFIX):
            kept["MATCH_EXP_JOB_GLIDEIN_" + key[len(_GLIDEIN_PREFIX):]] = _plain(value)
    owner = kept.get("Owner")
    if owner and not state.get("owner"):
        state["owner"] = owner
    global_id = kept.get("GlobalJobId")
    if isinstance(global_id, str) and "#" in global_id:
        add_alias(state, global_id.split("#")[0])


def _plain(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _close(intervals: List[list], when: int) -> None:
    if intervals and intervals[-1][1] is None:
        intervals[-1][1] = max(when, intervals[-1][0])


def _open_idle(state: Dict[str, Any], when: int) -> None:
    if not state["idle"] or state["idle"][-1][1] is not None:
        state["idle"].append([when, None])


def _run(state: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    runs = state["runs"]
    return runs[-1] if runs and runs[-1]["end"] is None else None


def _end_run(state: Dict[str, Any], when: int, reason: str) -> None:
    run = _run(state)
    if run is not None:
        run["end"] = max(when, run["start"])
        run["end_reason"] = reason
        _close(run["disconnects"], when)
        for transfer in run["transfers"]:
            if transfer[3] is None:
                transfer[3] = max(when, transfer[2] or transfer[1])


def glidein_of_slot(slot: Optional[str], host: Optional[str]) -> Dict[str, Any]:
    """The glidein a slot belongs to: glideins name their startd ``glidein_<pid>_<n>@<host>``,
    so a slot ``slot1_2@glidein_1234_5678@wn.example`` names it; the execute host's alias else."""
    out: Dict[str, Any] = {}
    match = _SLOT_GLIDEIN.match(slot or "")
    if match:
        out["name"] = match.group("name")
        out["host"] = match.group("host")
    elif host:
        alias = _ALIAS.search(host)
        if alias:
            out["host"] = alias.group(1)
    return out


def add_alias(state: Dict[str, Any], name: Any) -> None:
    """Another name of the job's schedd (the submit event's ``alias=``, the GlobalJobId's schedd part):
    ``gwtrace job C.P@name`` finds the job by any of them."""
    if not isinstance(name, str) or not name or name == state["schedd"]:
        return
    aliases = state.setdefault("schedd_aliases", [])
    if name.lower() not in aliases and len(aliases) < 8:
        aliases.append(name.lower())


def _submitted(state: Dict[str, Any], when: int, items: Dict[str, Any]) -> None:
    if state["submitted"] is None or when < state["submitted"]:
        state["submitted"] = when
    if items.get("SubmitHost") and not state.get("submit_host"):
        state["submit_host"] = items["SubmitHost"]
    alias = _ALIAS.search(str(items.get("SubmitHost") or ""))
    if alias:
        add_alias(state, alias.group(1))
    state["status"] = "idle"
    if not state["runs"] and not state["holds"]:
        if state["idle"]:
            state["idle"][0][0] = min(state["idle"][0][0], when)
        else:
            state["idle"].append([when, None])


def _execute(state: Dict[str, Any], when: int, items: Dict[str, Any]) -> None:
    _end_run(state, when, "superseded")
    pending = [t[1] if t[1] is not None else t[2] for t in state.get("pending_transfers", [])]
    began = min([t for t in pending if t is not None] + [when])
    _close(state["idle"], began)          # the wait ended when its input transfer began
    _close(state["holds"], when)          # executing: no longer held, even when the release was not logged
    slot, host = items.get("SlotName"), items.get("ExecuteHost")
    run = {"n": len(state["runs"]) + 1, "start": when, "end": None, "end_reason": None, "host": host,
           "slot": slot, "glidein": glidein_of_slot(slot, host), "memory_mb": None, "disconnects": [],
           "transfers": state.pop("pending_transfers", [])}   # its input transfer, logged before 001
    for transfer in run["transfers"]:
        if transfer[3] is None:
            transfer[3] = when
    state["runs"].append(run)
    state["status"] = "running"


def _drop_pending(state: Dict[str, Any], when: int, why: str) -> None:
    """An input transfer that no execution followed (the attempt ended first): a note, not a span."""
    for direction, queued, start, _ in state.pop("pending_transfers", []):
        begin = queued if queued is not None else start
        if begin is not None:
            state["notes"].append([when, f"{direction} transfer for {max(0, when - begin)} s, then {why} "
                                         "before the job executed"])


def _back_to_idle(reason: str) -> Any:
    def handler(state: Dict[str, Any], when: int, items: Dict[str, Any]) -> None:
        _drop_pending(state, when, reason)
        _end_run(state, when, reason)
        if state["status"] not in ("completed", "removed", "held"):
            state["status"] = "idle"
            _open_idle(state, when)
        text = items.get("Message") or items.get("Reason")
        if text:
            state["notes"].append([when, f"{reason}: {text}"])
    return handler


def _stop(state: Dict[str, Any], when: int, pending_why: Optional[str], run_end: str) -> None:
    """What ends with the attempt (termination, removal, a hold): a pending input transfer (noted as cut
    short by ``pending_why``, unless None), the run, the idle wait and an unreleased hold."""
    if pending_why is not None:
        _drop_pending(state, when, pending_why)
    _end_run(state, when, run_end)
    _close(state["idle"], when)
    _close(state["holds"], when)


def _terminated(state: Dict[str, Any], when: int, items: Dict[str, Any]) -> None:
    _stop(state, when, None, "terminated")    # ends a hold whose release was not logged (a cut-short 012)
    if items.get("TerminatedNormally") is False and items.get("TerminatedBySignal") is not None:
        state["exit"] = {"signal": int(items["TerminatedBySignal"])}
    else:
        state["exit"] = {"code": int(items.get("ReturnValue", 0) or 0)}
    state["status"] = "completed"
    state["ended"] = when


def _aborted(state: Dict[str, Any], when: int, items: Dict[str, Any]) -> None:
    _stop(state, when, "removal", "aborted")
    state["aborted"] = str(items.get("Reason") or "")
    state["status"] = "removed"
    state["ended"] = when


def _held(state: Dict[str, Any], when: int, items: Dict[str, Any]) -> None:
    _stop(state, when, "a hold", "held")
    code, sub = items.get("HoldReasonCode"), items.get("HoldReasonSubCode")
    if not code:
        # HTCondor writes "Code N Subcode M" for every hold; the bindings give 0/0 when that line is missing
        # (an event cut short): no code is known, which is not HTCondor's code 0
        code = sub = None
    state["holds"].append([when, None, None if code is None else int(code), None if sub is None else int(sub),
                           str(items.get("HoldReason") or "")])
    state["status"] = "held"


def _released(state: Dict[str, Any], when: int, items: Dict[str, Any]) -> None:
    _close(state["holds"], when)
    if state["status"] == "held":
        state["status"] = "idle"
        _open_idle(state, when)


def _image_size(state: Dict[str, Any], when: int, items: Dict[str, Any]) -> None:
    run = _run(state)
    memory = items.get("MemoryUsage")
    if run is not None and memory is not None:
        run["memory_mb"] = max(int(memory), run["memory_mb"] or 0)


def _disconnected(state: Dict[str, Any], when: int, items: Dict[str, Any]) -> None:
    run = _run(state)
    if run is not None and not (run["disconnects"] and run["disconnects"][-1][1] is None):
        run["disconnects"].append([when, None, str(items.get("DisconnectReason") or "")])


def _reconnected(state: Dict[str, Any], when: int, items: Dict[str, Any]) -> None:
    run = _run(state)
    if run is not None:
        _close(run["disconnects"], when)


_TRANSFER = {1: ("input", "queued"), 2: ("input", "started"), 3: ("input", "finished"),
             4: ("output", "queued"), 5: ("output", "started"), 6: ("output", "finished")}


def _transfer(state: Dict[str, Any], when: int, items: Dict[str, Any]) -> None:
    """HTCondor logs a run's input transfer before its 001 (executing): with no run going, an input transfer is
    kept aside and becomes the next run's; an output transfer belongs to the run going (else the last one)."""
    kind = _TRANSFER.get(int(items.get("Type", 0) or 0))
    if kind is None:
        return
    direction, step = kind
    run = _run(state)
    if run is not None:
        transfers = run["transfers"]
    elif direction == "input":
        transfers = state.setdefault("pending_transfers", [])
    elif state["runs"]:
        transfers = state["runs"][-1]["transfers"]
    else:
        return
    open_ones = [t for t in transfers if t[0] == direction and t[3] is None]
    current = open_ones[-1] if open_ones else None
    if current is None or step == "queued" and current[2] is not None:
        current = [direction, None, None, None]
        transfers.append(current)
    if step == "queued":
        current[1] = when
    elif step == "started":
        current[2] = when
    else:
        current[3] = when
        if current[2] is None:
            current[2] = current[1] if current[1] is not None else when


def _ad_event(state: Dict[str, Any], when: int, items: Dict[str, Any]) -> None:
    keep_ad(state, items)


def _grid_submit(state: Dict[str, Any], when: int, items: Dict[str, Any]) -> None:
    state["notes"].append([when, f"submitted to grid resource {items.get('GridResource', '')}".strip()])


def _remote_error(state: Dict[str, Any], when: int, items: Dict[str, Any]) -> None:
    state["notes"].append([when, f"remote error: {items.get('ErrorMsg', '')}".strip()])


HANDLERS = {0: _submitted, 1: _execute, 4: _back_to_idle("evicted"), 5: _terminated, 6: _image_size,
            7: _back_to_idle("shadow exception"), 9: _aborted, 12: _held, 13: _released, 21: _remote_error,
            22: _disconnected, 23: _reconnected, 24: _back_to_idle("reconnect failed"), 27: _grid_submit,
            28: _ad_event, 33: _ad_event, 40: _transfer}


MAX_SEEN = 400   # fingerprints kept per job: far more events than a job normally has


def _fingerprint(code: int, when: int, items: Dict[str, Any]) -> int:
    """The event's identity (its items are in a fixed order, but for the whole ads of 028/033)."""
    if code == 28 or code == 33:
        return zlib.crc32(repr((code, when, sorted(items.items(), key=lambda kv: kv[0]))).encode())
    return zlib.crc32(f"{code}:{when}:{items!r}".encode())


def apply(state: Dict[str, Any], code: int, when: int, items: Dict[str, Any]) -> bool:
    """Fold one event into the state; False for codes the journey does not use, and for an event already
    folded (the same job's events may come from two logs: the user's log and the schedd's event log)."""
    seen = state.setdefault("seen", [])
    mark = _fingerprint(code, when, items)
    if mark in seen:
        return False
    seen.append(mark)
    if len(seen) > MAX_SEEN:
        del seen[0]
    handler = HANDLERS.get(code)
    if state["last"] is None or when > state["last"]:
        state["last"] = when
    if handler is None:
        return False
    handler(state, when, items)
    return True


def apply_ad(state: Dict[str, Any], ad: Dict[str, Any]) -> None:
    """A job ad (``--job-ads``): keep its attributes; for a job no event told about, its status too."""
    keep_ad(state, ad)
    kept = state["ad"]
    if state["submitted"] is None and isinstance(kept.get("QDate"), int):
        state["submitted"] = kept["QDate"]
        if not state["idle"] and not state["runs"]:
            state["idle"].append([kept["QDate"], None])
    if state["status"] == "unknown" and isinstance(kept.get("JobStatus"), int):
        state["status"] = JOB_STATUS.get(kept["JobStatus"], "unknown")
        if state["status"] == "held" and not state["holds"]:
            since = kept.get("EnteredCurrentStatus") or state["submitted"] or 0
            _close(state["idle"], since)
            state["holds"].append([since, None, kept.get("HoldReasonCode"), kept.get("HoldReasonSubCode"),
                                   str(kept.get("HoldReason") or "")])
