"""HTCondor's hold reason codes, in plain words, with what the job's owner can do.

Written from HTCondor's manual ("Hold Reason Codes", docs/codes-other-values/
hold-table.rst, and src/condor_utils/condor_holdcodes.h for the codes the
table leaves out); the wording here is ours.  Subcodes: for codes 6-10 and
14 the subcode is the Unix errno of the failure; for 12/13 (file transfer)
it is the errno, 62 when a transfer plug-in timed out, or the plug-in's exit
status shifted left by eight bits; for 34 it names the resource.
"""

import errno
import os
import re
from typing import Any, Dict, Optional, Tuple

#: code -> (label, what happened, what to do)
CODES: Dict[int, Tuple[str, str, str]] = {
    0: ("Unspecified", "the job was held without a reason code", "read the hold reason text; ask the pool's admins"),
    1: ("UserRequest", "someone (you or an administrator) ran condor_hold on it",
        "release it with condor_release when it should run"),
    2: ("GlobusGramError", "the grid (GRAM) submission failed", "check the grid resource and your credentials"),
    3: ("JobPolicy", "your own periodic_hold or on_exit_hold expression became true",
        "look at periodic_hold / on_exit_hold in the submit file; fix the cause, then condor_release"),
    4: ("CorruptedCredential", "the job's credentials (proxy or token) are not valid",
        "renew the proxy or token, then condor_release"),
    5: ("JobPolicyUndefined", "one of your policy expressions could not be evaluated (undefined)",
        "fix the expression in the submit file (an attribute it uses is missing)"),
    6: ("FailedToCreateProcess", "the worker could not start the executable",
        "check that the executable exists, is executable and suits the worker's platform"),
    7: ("UnableToOpenOutput", "the job's output file could not be opened", "check the output path and its directory"),
    8: ("UnableToOpenInput", "the job's input file could not be opened", "check that the input file exists"),
    9: ("UnableToOpenOutputStream", "the job's output stream could not be opened",
         "check output/streaming settings in the submit file"),
    10: ("UnableToOpenInputStream", "the job's input stream could not be opened",
         "check input/streaming settings in the submit file"),
    11: ("InvalidTransferAck", "HTCondor's file transfer protocol failed",
         "release the job; if it repeats, tell the admins"),
    12: ("TransferOutputError", "sending the job's output (or checkpoint) files back failed",
         "check transfer_output_files and the space where they land; a plug-in failure is in the subcode"),
    13: ("TransferInputError", "fetching the job's input files failed",
         "check transfer_input_files (paths, URLs, credentials); a plug-in failure is in the subcode"),
    14: ("IwdError", "the job's initial working directory cannot be reached",
         "make sure initialdir exists and is writable"),
    15: ("SubmittedOnHold", "the job was submitted on hold (hold = true)", "condor_release it when it should start"),
    16: ("SpoolingInput", "its input files are still being spooled", "wait: it is released when spooling ends"),
    17: ("JobShadowMismatch", "the job does not suit the shadow of the submit host", "resubmit; tell the admins"),
    18: ("InvalidTransferGoAhead", "HTCondor's file transfer protocol failed",
         "release the job; if it repeats, tell the admins"),
    19: ("HookPrepareJobFailure", "the worker's prepare-job hook failed", "tell the site or pool admins"),
    20: ("MissedDeferredExecutionTime", "the job missed its deferred start time",
         "change deferral_time / deferral_window and release it"),
    21: ("StartdHeldJob", "the worker's policy (WANT_HOLD) held it", "read the hold reason; ask the admins"),
    22: ("UnableToInitUserLog", "the job's event log could not be written",
         "make sure the directory of the submit file's log exists and is writable"),
    23: ("FailedToAccessUserAccount", "HTCondor could not act as your user account", "tell the admins"),
    24: ("NoCompatibleShadow", "no shadow suits this job", "tell the admins"),
    25: ("InvalidCronSettings", "the job's cron_* settings are invalid", "fix the cron_* commands in the submit file"),
    26: ("SystemPolicy", "the pool's SYSTEM_PERIODIC_HOLD policy held it (often: too long, too big, too many restarts)",
         "read the hold reason for the limit it broke; change the job to fit, then release"),
    27: ("SystemPolicyUndefined", "the pool's periodic policy could not be evaluated for this job",
         "tell the admins"),
    28: ("GlexecChownSandboxToUser", "glexec could not hand the sandbox to the user", "tell the admins"),
    29: ("PrivsepChownSandboxToUser", "privilege separation could not hand the sandbox to the user", "tell the admins"),
    30: ("GlexecChownSandboxToCondor", "glexec could not hand the sandbox back", "tell the admins"),
    31: ("PrivsepChownSandboxToCondor", "privilege separation could not hand the sandbox back", "tell the admins"),
    32: ("MaxTransferInputSizeExceeded", "its input files are bigger than the pool allows (MAX_TRANSFER_INPUT_MB)",
         "send less input (or fetch it from storage inside the job)"),
    33: ("MaxTransferOutputSizeExceeded", "its output files are bigger than the pool allows (MAX_TRANSFER_OUTPUT_MB)",
         "write less output back (or upload it to storage from the job)"),
    34: ("JobOutOfResources", "the job used more than it had been given", "ask for more in the submit file"),
    35: ("InvalidDockerImage", "the container image could not be used", "check docker_image / container_image"),
    36: ("FailedToCheckpoint", "the job failed when asked to checkpoint", "check the job's checkpoint handling"),
    43: ("PreScriptFailed", "the job's pre script failed", "look at the pre script's output"),
    44: ("PostScriptFailed", "the job's post script failed", "look at the post script's output"),
    45: ("SingularityTestFailed", "the worker's Singularity/Apptainer self-test failed before the job",
         "the worker is broken, not the job: release it to run elsewhere; tell the site"),
    46: ("JobDurationExceeded", "the job ran longer than its allowed_job_duration",
         "raise allowed_job_duration or split the work"),
    47: ("JobExecuteExceeded", "the job's allowed execution time was exceeded",
         "raise allowed_execute_duration or split the work"),
    48: ("HookShadowPrepareJobFailure", "the submit side's prepare-job hook asked to hold it", "tell the admins"),
}
for _code, _what in ((37, "user error"), (38, "internal error"), (39, "administrator error"),
                     (40, "connection problem"), (41, "server error"), (42, "instance possibly lost")):
    CODES[_code] = (f"EC2{_what.title().replace(' ', '')}", f"an EC2 (cloud) universe {_what}",
                    "read the hold reason; check the EC2 settings")

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
