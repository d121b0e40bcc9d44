"""The accelerator's load check itself: the child bash processes that decide whether a library
may be trusted in a bash binary (gwtrace/shim/accel.py says when it runs and what it leaves).

1. The probe: a child of the bash under test loads the library (``-z now``: a symbol that bash
   lacks fails here) and runs its ``_gwtrace_aprobe`` builtin (bash/accel/probe.c), which reads
   back the fields and globals the library uses and writes values the child reads back; it also
   reports the library's stamp, which must be the one the shell files were written for.
2. The canary: a small workload under the auto layer, with the library loaded the way a traced
   script loads it and again with the shell code alone (``GWTRACE_ACCEL=0``): output, status and
   normalized event log must be the same, and the C code must have done slow paths itself (its
   ``--count``), so that a library handing everything to the shell code is refused too.

Every child runs in its own process group, bounded by CHILD_TIMEOUT_S, with a minimal
environment, its output captured: nothing of it reaches the user.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import signal
import subprocess
import tempfile
from typing import Dict, List, Mapping, Optional, Tuple

from gwtrace.shim.accel_copies import SO_NAME, VERIFIED_DIR, materialize

#: One child bash of the check gets this long; a timeout is a refusal that is not remembered.
CHILD_TIMEOUT_S = 10.0
#: The auto layer's files the canary needs (run.py's AUTO_LIBS: gwtrace-auto.sh loads the others).
LAYER_GLOB = "gwtrace-auto*.sh"

#: The probe (step 1), run by the bash under test with the library's path as $1.
PROBE_NAME = "probe.sh"
PROBE = r"""
_gwtrace_pv=plain
readonly _gwtrace_pr=ro
export _gwtrace_px=ex
_gwtrace_pa=([0]=a [5]=b [9]=c)
declare -A _gwtrace_pm=([k]=v)
_gwtrace_p7() { return 7; }
_gwtrace_pf() {
  local _gwtrace_pl=lo
  _gwtrace_p7
  _gwtrace_aprobe "$LINENO" "$BASH_SUBSHELL" "$?"
}
printf 'bash=%s\nversion=%s\n' "$BASH" "$BASH_VERSION"
enable -f "$1" _gwtrace_aprobe || { echo "refused=enable -f failed"; exit 0; }
enable -f "$1" _gwtrace_adbgc _gwtrace_atopc || { echo "refused=enable -f of the other builtins failed"; exit 0; }
_gwtrace_pf
printf 'stamp=%s\n' "${_gwtrace_pstamp-}"
[[ -z ${_gwtrace_pfail-} ]] || { echo "refused=the library reads $_gwtrace_pfail wrong"; exit 0; }
[[ $_gwtrace_pv == 'set in C' ]] || { echo "refused=a scalar the library set reads back wrong"; exit 0; }
[[ ${#_gwtrace_pa[@]} == 4 && ${_gwtrace_pa[7]} == c7 && ${_gwtrace_pa[9]} == c ]] \
  || { echo "refused=an array element the library set reads back wrong"; exit 0; }
[[ ${_gwtrace_pm[k2]-} == m2 && ${_gwtrace_pm[k]} == v ]] || { echo "refused=an associative key the library set reads back wrong"; exit 0; }
[[ $(declare -p _gwtrace_pe) == 'declare -x _gwtrace_pe="exported in C"' ]] \
  || { echo "refused=a variable the library exported reads back wrong"; exit 0; }
echo ok
"""

#: The canary (step 2) at the functions level; it runs CANARY_TOP at the scripts level.
CANARY = r"""
set -u
leaf() { echo "leaf $1"; }
two() { leaf "$1"; leaf "$1$1"; }
fails() { return 3; }
rec() { (( $1 > 0 )) || return 0; rec $(( $1 - 1 )); }
getv() { echo "v$1"; }
two a
v=$(getv 1); echo "$v"
rec 3
fails || echo "or $?"
fails; echo "untested $?"
( two sub )
echo x | while read -r l; do leaf "$l"; done
GWTRACE_AUTO_LEVEL=scripts "$BASH" "$CANARY_DIR/top.sh" 1; echo "top $?"
{ builtin _gwtrace_adbgc --count _gwtrace_pcnt && printf '%s\n' "$_gwtrace_pcnt" >"$CANARY_DIR/count-functions"; } 2>/dev/null || :
"""

CANARY_TOP = r"""
f() { echo "f $1"; }
fails() { return 3; }
f 1
fails || echo or
f 2
x=$1
f 3
{ builtin _gwtrace_atopc --count _gwtrace_pcnt && printf '%s\n' "$_gwtrace_pcnt" >"$CANARY_DIR/count-scripts"; } 2>/dev/null || :
f 4
exit 4
"""




def check(bash: str, library: bytes, layer: str, stamp: str) -> Tuple[bool, str, str]:
    """(passed, why not, BASH_VERSION) for the library's bytes LIBRARY in BASH (steps 1 and 2)."""
    with tempfile.TemporaryDirectory(prefix="gwtrace-accel-check.") as tmp:
        so = os.path.join(tmp, SO_NAME)
        with open(so, "wb") as f:
            f.write(library)
        env = {"PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C", "HOME": tmp, "CANARY_DIR": tmp}
        probe = os.path.join(tmp, PROBE_NAME)
        with open(probe, "w") as f:
            f.write(PROBE)
        rc, stdout, stderr = _run([bash, probe, so], env, tmp)
        if rc is None:
            return False, "timeout", ""
        facts = dict(line.split("=", 1) for line in stdout.splitlines() if "=" in line)
        version, seen_as = facts.get("version", ""), facts.get("bash", "")
        if rc != 0 or stdout.rstrip().rsplit("\n", 1)[-1] != "ok":
            return False, _probe_failure(rc, facts, stderr.replace(tmp + "/", "")), version
        if facts.get("stamp") != stamp:
            return False, f"library stamp {facts.get('stamp')!r}, the shell files want {stamp!r}", version
        if seen_as != bash:
            return False, f"this bash sees itself as {seen_as!r}", version
        return _canary(bash, library, layer, stamp, version, tmp, env) + (version,)


def _probe_failure(rc: Optional[int], facts: Mapping[str, str], stderr: str) -> str:
    if rc is not None and rc < 0:
        return f"the probe died of signal {-rc} ({_signame(-rc)})"
    if "refused" in facts:
        detail = stderr.strip().splitlines()[-1] if stderr.strip() else ""
        detail = detail.split(": ", 2)[-1] if detail.startswith(PROBE_NAME) else detail   # not the script's name
        return facts["refused"] + (f" ({detail[-200:]})" if detail and "enable -f" in facts["refused"] else "")
    return f"the probe exited {rc}: {stderr.strip()[:200]}"


def _signame(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return "?"


def _canary(bash: str, library: bytes, layer: str, stamp: str, version: str, tmp: str,
            env: Dict[str, str]) -> Tuple[bool, str]:
    staged = os.path.join(tmp, "layer")
    os.mkdir(staged)
    for path in glob.glob(os.path.join(layer, LAYER_GLOB)):
        shutil.copy2(path, staged)
    with open(os.path.join(staged, SO_NAME), "wb") as f:      # shipped: a refusal is then counted
        f.write(library)
    if not materialize(os.path.join(staged, VERIFIED_DIR), stamp, version, bash, os.stat(bash), library):
        return False, f"cannot write in {tmp}"
    for name, text in (("canary.sh", CANARY), ("top.sh", CANARY_TOP)):
        with open(os.path.join(tmp, name), "w") as f:
            f.write(text)
    runs = {}
    for accel in ("1", "0"):
        events = os.path.join(tmp, f"events-{accel}")
        os.mkdir(events)
        run_env = dict(env, BASH_ENV=os.path.join(staged, "gwtrace-auto.sh"), GWTRACE_DIR=events,
                       GWTRACE_AUTO_LEVEL="functions", GWTRACE_ACCEL=accel)
        rc, stdout, stderr = _run([bash, os.path.join(tmp, "canary.sh")], run_env, tmp)
        if rc is None:
            return False, "timeout"
        if rc < 0:
            return False, f"the canary {'with' if accel == '1' else 'without'} the library died of signal {-rc} " \
                          f"({_signame(-rc)})"
        runs[accel] = (rc, stdout, stderr, normalized_events(read_text(os.path.join(events, "events.log"))))
    if runs["1"] != runs["0"]:
        return False, "the canary's events differ from the shell code's: " + _first_difference(runs["1"], runs["0"])
    for level in ("functions", "scripts"):
        counts = read_text(os.path.join(tmp, f"count-{level}")).split()
        if len(counts) != 2 or not counts[0].isdigit() or int(counts[0]) == 0:
            return False, f"the library did no slow path of the {level} level in the canary"
    return True, ""


def _first_difference(a: tuple, b: tuple) -> str:
    labels = ("status", "output", "error output", "events")
    for label, x, y in zip(labels, a, b):
        if x != y:
            if isinstance(x, list):
                for i, (lx, ly) in enumerate(zip(x + [""] * len(y), y + [""] * len(x))):
                    if lx != ly:
                        return f"event {i + 1}: {lx[:120]!r} with it, {ly[:120]!r} without"
            return f"{label}: {str(x)[:120]!r} with it, {str(y)[:120]!r} without"
    return "?"


def normalized_events(text: str) -> List[str]:
    """Event lines with span/trace ids, times and process ids replaced by their order of
    appearance: what two runs of one script must share."""
    names: Dict[str, str] = {}
    counts: Dict[str, int] = {}

    def alias(kind: str, value: str) -> str:
        key = kind + value
        if key not in names:
            counts[kind] = counts.get(kind, 0) + 1
            names[key] = f"{kind}{counts[kind] - 1}"
        return names[key]

    out = []
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) > 3:
            fields[2] = "T"
            fields[3] = alias("p", fields[3])
        fields = [alias("s", f) if re.fullmatch(r"[0-9a-f]{16}", f) else f for f in fields]
        fields = [alias("t", f) if re.fullmatch(r"[0-9a-f]{32}", f) else f for f in fields]
        fields = [re.sub(r"^process\.pid=\d+$", "process.pid=P", f) for f in fields]
        out.append("\t".join(fields))
    return out


def _run(argv: List[str], env: Dict[str, str], cwd: str) -> Tuple[Optional[int], str, str]:
    """ARGV's status (negative: a signal; None: timed out, its process group killed), output, errors."""
    try:
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        return 126, "", f"cannot run {argv[0]}: {exc.strerror}"
    try:
        out, err = proc.communicate(timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.communicate()
        return None, "", ""
    return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def read_text(path: str) -> str:
    """The text of PATH, "" when it cannot be read (a child that wrote nothing)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""
