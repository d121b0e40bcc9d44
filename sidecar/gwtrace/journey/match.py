"""Which of an idle job's requests no glidein seen at its sites could satisfy, by HTCondor's own ClassAd
evaluation.

Why the bindings: a job's ``Requirements`` and requests are ClassAd expressions
(``request_memory = ifThenElse(MemoryUsage =!= undefined, ...)``, ``stringListMember``,
``=!=``, ``MY.``/``TARGET.`` scoping): only HTCondor's evaluator gives the
negotiator's answer.  The ad is rebuilt from the job's kept attributes; its
``Requirements`` is cut into its top-level ``&&`` clauses (a clause is
whatever the negotiator would also have to satisfy on its own), and its
requests (CPUs, memory, GPUs) become clauses of their own; each is evaluated
against a machine ad made from every glidein record that offered slots at
the job's sites in the last day (``Cpus``, ``Memory``, ``GPUs``,
``GLIDEIN_Site``, ``GLIDEIN_Entry_Name``, ``GLIDEIN_Max_Walltime``,
``GLIDEIN_ToDie``).  A clause true on no glidein and false on at least one
is a request no glidein could satisfy.  The job's wall time (``MaxWallTimeMins``,
``JOB_EXPECTED_MAX_LIFETIME``, ``MaxWallTime``) is compared with the lifetime
the glideins alive now had left.
"""

from typing import Any, Dict, List, Optional, Tuple

#: Kept attributes that are expressions (a string kept for them is the expression's text, never a literal).
EXPR_KEYS = ("Requirements", "RequestCpus", "RequestMemory", "RequestDisk", "RequestGpus", "MaxWallTimeMins",
             "MaxWallTime", "JOB_EXPECTED_MAX_LIFETIME", "MemoryUsage", "ImageSize", "DiskUsage", "ResidentSetSize")
#: The job's wall time: attribute -> seconds per unit (CMS's minutes, jobsub's and HTCondor-style seconds).
WALL_KEYS = (("MaxWallTimeMins", 60), ("JOB_EXPECTED_MAX_LIFETIME", 1), ("MaxWallTime", 1))
#: request checks: (kind, the request attribute, the glidein's attribute, the submit-file command)
REQUESTS = (("cpus", "RequestCpus", "Cpus", "request_cpus"), ("memory", "RequestMemory", "Memory", "request_memory"),
            ("gpus", "RequestGpus", "GPUs", "request_gpus"))
UNITS = {"cpus": "CPU(s)", "memory": "MB of memory", "gpus": "GPU(s)"}


def bindings() -> Any:
    """HTCondor's ClassAd module (``classad2`` of the wheels, else the distributions' ``classad``)."""
    try:
        import classad2 as classad
    except ImportError:
        try:
            import classad  # type: ignore[no-redef]
        except ImportError:
            raise RuntimeError("comparing a job's requirements with glideins needs HTCondor's Python bindings: "
                               "pip install 'gwtrace[factory]'") from None
    return classad


def split_and(text: str) -> List[str]:
    """The top-level ``&&`` clauses of an expression's text (outer parentheses dropped, nested ones
    cut again); an expression with a top-level ``||`` or ``?:`` is one clause (it binds looser than ``&&``)."""
    text = _unwrap(text.strip())
    parts, depth, quoted, start, at = [], 0, False, 0, 0
    loose = False
    while at < len(text):
        char = text[at]
        if quoted:
            if char == "\\":
                at += 1
            elif char == '"':
                quoted = False
        elif char == '"':
            quoted = True
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif depth == 0 and text.startswith("&&", at):
            parts.append(text[start:at])
            start = at + 2
            at += 1
        elif depth == 0 and (text.startswith("||", at) or char == "?"):
            loose = True
        at += 1
    parts.append(text[start:])
    if loose or len(parts) == 1:
        return [text] if text else []
    out: List[str] = []
    for part in parts:
        out.extend(split_and(part))
    return out


def _unwrap(text: str) -> str:
    """``(a && b)`` -> ``a && b``; ``(a) && (b)`` stays."""
    while text.startswith("(") and text.endswith(")"):
        depth = 0
        for at, char in enumerate(text):
            depth += char == "("
            depth -= char == ")"
            if depth == 0 and at < len(text) - 1:
                return text
        text = text[1:-1].strip()
    return text


def job_ad(classad: Any, kept: Dict[str, Any]) -> Any:
    """The job's ClassAd from its kept attributes (expressions parsed, the rest as literals)."""
    ad = classad.ClassAd()
    for key, value in kept.items():
        if value is None:
            continue
        if key in EXPR_KEYS and isinstance(value, str):
            try:
                ad[key] = classad.ExprTree(value)
            except Exception:        # noqa: BLE001 - the bindings' own exception type differs by version
                continue
        else:
            ad[key] = value
    return ad


def evaluate(classad: Any, ad: Any, key: str) -> Any:
    """An attribute's value (None when it is absent, undefined or an error)."""
    try:
        value = ad.eval(key)
    except Exception:                # noqa: BLE001 - absent (KeyError) or a bindings error
        return None
    return value if isinstance(value, (bool, int, float, str)) else None


def machine_ad(classad: Any, glidein: Dict[str, Any], to_die: bool = True) -> Any:
    """What a glidein's slots advertised, as far as its record tells (``GLIDEIN_ToDie`` when ``to_die``)."""
    ad = classad.ClassAd()
    for key, value in (("Cpus", glidein["cpus"]), ("TotalCpus", glidein["cpus"]), ("Memory", glidein["memory_mb"]),
                       ("TotalMemory", glidein["memory_mb"]), ("GPUs", glidein["gpus"] or 0),
                       ("TotalGPUs", glidein["gpus"] or 0), ("GLIDEIN_Site", glidein["site"]),
                       ("GLIDEIN_Entry_Name", glidein["entry"]), ("GLIDEIN_Max_Walltime", glidein["max_walltime"])):
        if value is not None:
            ad[key] = value
    if to_die and glidein["max_walltime"] and glidein["started"]:
        ad["GLIDEIN_ToDie"] = glidein["started"] + glidein["max_walltime"]
    return ad


def _kinds(classad: Any, glideins: List[Dict[str, Any]], to_die: bool) -> Tuple[List[Any], List[int], List[int]]:
    """(machine ads, how many glideins each stands for, each glidein's ad): glideins of one entry offer the
    same slots, so each distinct offer is evaluated once (thousands of glideins, a handful of offers)."""
    index: Dict[Tuple[Any, ...], int] = {}
    ads: List[Any] = []
    counts: List[int] = []
    of: List[int] = []
    for glidein in glideins:
        key = (glidein["cpus"], glidein["memory_mb"], glidein["gpus"], glidein["site"], glidein["entry"],
               glidein["max_walltime"], (glidein["started"] if to_die else None))
        at = index.get(key)
        if at is None:
            at = index[key] = len(ads)
            ads.append(machine_ad(classad, glidein, to_die))
            counts.append(0)
        counts[at] += 1
        of.append(at)
    return ads, counts, of


def offers(conn: Any, sites: List[str], now: float, window: float) -> List[Dict[str, Any]]:
    """The glideins at ``sites`` (every site when empty) whose HTCondor ran at some time in the last ``window``
    seconds: what they offered."""
    where = "json_extract(record, '$.condor_start') IS NOT NULL AND (ended IS NULL OR ended >= ?)"
    args: List[Any] = [now - window]
    if sites:
        where = f"site IN ({','.join('?' * len(sites))}) AND " + where
        args = list(sites) + args
    rows = conn.execute("SELECT site, entry, cpus, memory_mb, gpus, started, ended,"
                        " json_extract(record, '$.max_walltime') FROM glideins WHERE " + where, args)
    return [{"site": r[0], "entry": r[1], "cpus": r[2], "memory_mb": r[3], "gpus": r[4], "started": r[5],
             "ended": r[6], "max_walltime": r[7]} for r in rows]


def _tally(job: Any, clause: Any, machines: List[Any], counts: List[int],
           ok: List[bool]) -> Tuple[int, int, int]:
    """(true, false, undefined) over the glideins (each machine ad counted for the glideins it stands for);
    ``ok`` of a machine ad becomes False where the clause is false (undefined: not known to fail)."""
    true = false = undefined = 0
    for at, machine in enumerate(machines):
        try:
            value = clause.eval(job, machine)
        except Exception:            # noqa: BLE001
            value = None
        if value is True:
            true += counts[at]
        elif value is False:
            false += counts[at]
            ok[at] = False
        else:
            undefined += counts[at]
    return true, false, undefined


def wall_time(classad: Any, job: Any) -> Optional[Tuple[str, int]]:
    """(attribute, seconds) of the job's expected wall time, when its ad has one."""
    for key, unit in WALL_KEYS:
        value = evaluate(classad, job, key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return key, int(value * unit)
    return None


def compare(kept: Dict[str, Any], glideins: List[Dict[str, Any]], now: float) -> Dict[str, Any]:
    """Each check (requests, Requirements' clauses, wall time) against the glideins: ``blocking`` (no glidein
    satisfies it), ``unchecked`` (clauses undefined on every glidein: they use attributes the records lack),
    ``fit`` (glideins satisfying every check) and the largest offers."""
    classad = bindings()
    job = job_ad(classad, kept)
    text = kept.get("Requirements")
    parts = split_and(text) if isinstance(text, str) else []
    machines, counts, of = _kinds(classad, glideins, any("todie" in p.lower() for p in parts))
    ok = [True] * len(machines)
    total = len(glideins)
    best = {"cpus": max((g["cpus"] or 0 for g in glideins), default=0),
            "memory": max((g["memory_mb"] or 0 for g in glideins), default=0),
            "gpus": max((g["gpus"] or 0 for g in glideins), default=0)}
    blocking: List[Dict[str, Any]] = []
    unchecked: List[str] = []
    for kind, attr, target, knob in REQUESTS:
        asked = evaluate(classad, job, attr)
        if not isinstance(asked, (int, float)) or isinstance(asked, bool) or (kind == "gpus" and asked <= 0):
            continue
        true, false, _ = _tally(job, classad.ExprTree(f"TARGET.{target} >= MY.{attr}"), machines, counts, ok)
        if true == 0 and false:
            blocking.append({"kind": kind, "asked": asked, "best": best[kind], "knob": knob, "count": total})
    for part in parts:
        try:
            clause = classad.ExprTree(part)
        except Exception:            # noqa: BLE001
            unchecked.append(part)
            continue
        true, false, undefined = _tally(job, clause, machines, counts, ok)
        covered = any(attr.lower() in part.lower() for _, attr, _, _ in REQUESTS)
        if true == 0 and false and not covered:
            blocking.append({"kind": "requirement", "clause": part, "count": total, "false": false,
                             "undefined": undefined})
        elif true == 0 and undefined == total and total:
            unchecked.append(part)
    passing = [ok[at] for at in of]
    wall = wall_time(classad, job)
    lifetimes = [g["started"] + g["max_walltime"] - now for g in glideins
                 if g["ended"] is None and g["started"] and g["max_walltime"]]
    if wall is not None and lifetimes:
        longest = max(lifetimes)
        if longest < wall[1]:
            blocking.append({"kind": "lifetime", "attr": wall[0], "asked": wall[1], "best": max(0, int(longest)),
                             "count": len(lifetimes)})
        for index, glidein in enumerate(glideins):
            if glidein["ended"] is None and glidein["started"] and glidein["max_walltime"] \
                    and glidein["started"] + glidein["max_walltime"] - now < wall[1]:
                passing[index] = False
    return {"blocking": blocking, "unchecked": unchecked, "fit": sum(passing), "count": total,
            "wall": wall, "lifetimes_known": len(lifetimes)}
