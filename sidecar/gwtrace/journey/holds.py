"""HTCondor's hold reason codes, in plain words, with what the job's owner can do.

Written from HTCondor's manual ("Hold Reason Codes", docs/codes-other-values/
hold-table.rst, and src/condor_utils/condor_holdcodes.h for the codes the
table leaves out); the wording here is ours.  Subcodes: for codes 6-10 and
14 the subcode is the Unix errno of the failure; for 12/13 (file transfer)
it is the errno, 62 when a transfer plug-in timed out, or the plug-in's exit
status shifted left by eight bits; for 34 it names the resource.
"""

import errno
import json
import os
import pkgutil
import re
from typing import Any, Dict, Optional, Tuple

#: code -> (label, what happened, what to do); the rows are data (hold_codes.json, one code a line),
#: read with pkgutil so that they load from a .pyz as from a checkout
CODES: Dict[int, Tuple[str, str, str]] = {
    int(code): (label, meaning, suggestion)
    for code, label, meaning, suggestion in json.loads(pkgutil.get_data(__name__, "hold_codes.json") or b"[]")
}

#: subcodes of 34 (JobOutOfResources): which resource, and which request to raise
OUT_OF = {102: ("memory", "request_memory"), 104: ("disk", "request_disk")}
_ERRNO_CODES = (6, 7, 8, 9, 10, 12, 13, 14)


_MEASURED = re.compile(r"(?:measured|peak)[^0-9.]{0,40}?(\d+(?:\.\d+)?)\s*(megabytes|mb|mib|kilobytes|kb|gigabytes|gb)\b",
                       re.IGNORECASE)
_SCALE = {"kilobytes": 1 / 1024, "kb": 1 / 1024, "gigabytes": 1024, "gb": 1024}


def measured_mb(reason: str) -> Optional[int]:
    """The memory use HTCondor measured, from its hold reason text ("... Last measured usage: 2100
    megabytes ..."), in MB; None when the text gives none."""
    found = [int(float(n) * _SCALE.get(u.lower(), 1)) for n, u in _MEASURED.findall(reason or "")]
    return max(found) if found else None


def _subcode_text(code: int, sub: int) -> Optional[str]:
    if code in (12, 13) and sub >= 256:
        return f"the file-transfer plug-in exited with status {sub >> 8}"
    if code in (12, 13) and sub == errno.ETIME:
        return "a file-transfer plug-in timed out"
    if code in _ERRNO_CODES and sub > 0:
        return f"errno {sub} ({os.strerror(sub)})"
    return None


def _round_up(mb: float) -> int:
    """A request with some headroom, rounded up to 100 MB."""
    return int(-(-mb // 100) * 100)


def explain(code: Any, subcode: Any = None, reason: str = "") -> Dict[str, Any]:
    """A hold in plain words: ``label``, ``meaning``, ``suggestion`` (and ``subcode_meaning`` when known)."""
    try:
        code = int(code)
    except (TypeError, ValueError):
        return {"label": "unknown", "meaning": "the hold has no reason code", "suggestion":
                "read the hold reason text" + (f": {reason}" if reason else "")}
    sub = None
    try:
        sub = int(subcode) if subcode is not None else None
    except (TypeError, ValueError):
        pass
    label, meaning, suggestion = CODES.get(code, ("unknown", f"hold code {code} is not in gwtrace's table",
                                                  "read the hold reason text; ask the pool's admins"))
    out: Dict[str, Any] = {"label": label, "meaning": meaning, "suggestion": suggestion}
    if code == 34 and sub in OUT_OF:
        resource, knob = OUT_OF[sub]
        out["meaning"] = f"the job used more {resource} than it had been given"
        out["suggestion"] = f"raise {knob} in the submit file (above what the job really uses), then resubmit"
        peak = measured_mb(reason) if resource == "memory" else None
        if peak is not None:
            out["suggestion"] = (f"raise {knob} above the {peak} MB HTCondor measured (e.g. {knob} = "
                                 f"{_round_up(peak * 1.2)}), then resubmit")
    elif sub is not None:
        text = _subcode_text(code, sub)
        if text:
            out["subcode_meaning"] = text
    return out
