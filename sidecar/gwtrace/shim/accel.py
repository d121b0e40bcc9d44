"""The accelerator's load check: a bash binary gets ``gwtrace-accel.so`` only after a child of it
has shown that the library reads that bash's structures right and changes nothing in a trace.

Why: the accelerator (``bash/accel/``, docs/shim.md "The accelerator") declares bash's structures
by hand. A distribution's bash with another layout would have it free() a foreign pointer or write
into a readonly variable (abort, segfault), and a symbol that bash lacks would end the traced
script with "symbol lookup error" (exit 127): every traced script on that node would die. So the
library is never ``enable -f``-ed in a traced script until this check has passed for that bash
binary, in children that can crash without harm:

1. the probe: a child bash loads the library and runs its ``_gwtrace_aprobe`` builtin, which reads
   back the fields and globals the library uses (a scalar's, a readonly, an exported and a local
   variable's flags and context, an array's length with a hole in it, an associative array's
   element, ``line_number``, ``subshell_level``, ``$?``, the printed command) and writes values the
   child then reads back; it also reports the library's stamp, which must be the one the shell
   files were written for;
2. the canary: a small workload (function calls, statuses, a subshell, a command substitution, a
   pipeline, and a child at the scripts level) under the auto layer with the verified copy loaded
   by the traced scripts' own path, and again with the shell code alone (``GWTRACE_ACCEL=0``): the
   event logs, output and status must be the same once ids, times and process ids are replaced by
   their order of appearance, and the C code must have done slow paths itself (its ``--count``).

A passing pair is *materialized*: the library's bytes, as checked, copied to
``<layer>/gwtrace-accel.d/<stamp>_<BASH_VERSION><$BASH with / as %>.so`` with the bash binary's
mtime. gwtrace-auto.sh loads only that file, and only when its mtime is the one of ``$BASH``
(``! -nt`` and ``! -ot``: four stat calls, no fork): a bash replaced, or another one at the same
path (a container's), or shell files written for another stamp find no copy, run the shell code
and say so on their script span (``gwtrace.accel=unverified``, counted by the sidecar as
``bash_accel_unverified``). Verdicts are kept per (library, stamp, bash path, device, inode, size,
mtime) in ``<layer>/gwtrace-accel.d/verdicts/`` (the reason of a refusal is there) and in the
per-user cache, so the children run once per bash binary and library, not once per ``gwtrace run``.

Node-side code: standard library only, Python 3.9.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

SO_NAME = "gwtrace-accel.so"
#: Beside gwtrace-auto.sh: the verified copies, and the verdicts.
VERIFIED_DIR = "gwtrace-accel.d"
#: The stamp the shell files were written for, as gwtrace-auto.sh names the copy it loads.
_SHELL_STAMP = re.compile(r"gwtrace-accel\.d/(\w+)_\$BASH_VERSION")
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


@dataclass(frozen=True)
class Verdict:
    """The check's answer for one bash path: ``ok``, or why not."""

    bash: str
    ok: bool
    reason: str = ""
    cached: bool = False

    def line(self) -> str:
        state = "verified" if self.ok else f"refused: {self.reason}"
        return f"{self.bash}: {state}{' (cached)' if self.cached else ''}"


def verified_name(stamp: str, bash_version: str, bash_path: str) -> str:
    """The copy's name, as gwtrace-auto.sh spells it: ``STAMP_$BASH_VERSION${BASH//\\//%}.so``."""
    return f"{stamp}_{bash_version}{bash_path.replace('/', '%')}.so"


def shell_stamp(layer: str) -> Optional[str]:
    """The library stamp the layer's gwtrace-auto.sh loads, or None when it names none."""
    try:
        with open(os.path.join(layer, "gwtrace-auto.sh"), encoding="utf-8", errors="replace") as f:
            match = _SHELL_STAMP.search(f.read())
    except OSError:
        return None
    return match.group(1) if match else None


def candidate_bashes(command: Sequence[str], environ: Mapping[str, str]) -> List[str]:
    """The bash binaries a traced command is likely to run, as they will see themselves (``$BASH``):
    the PATH's ``bash`` (``bash x.sh``, ``#!/usr/bin/env bash``), /bin/bash and /usr/bin/bash
    (``#!/bin/bash``), and COMMAND's own, or its ``#!`` line's, when that is a bash."""
    path = environ.get("PATH", os.defpath)
    found: List[str] = []

    def add(candidate: Optional[str]) -> None:
        if candidate and os.path.isabs(candidate) and candidate not in found and os.access(candidate, os.X_OK) \
                and os.path.isfile(candidate):
            found.append(candidate)

    add(shutil.which("bash", path=path))
    add("/bin/bash")
    add("/usr/bin/bash")
    if command:
        first = command[0] if "/" in command[0] else shutil.which(command[0], path=path)
        first = os.path.abspath(first) if first else None
        if first and os.path.basename(first).startswith("bash"):
            add(first)
        elif first:
            words = _shebang(first)
            if words and os.path.basename(words[0]).startswith("bash"):
                add(words[0])
            elif len(words) > 1 and os.path.basename(words[0]) == "env" and words[1].startswith("bash"):
                add(shutil.which(words[1], path=path))
    return found


def _shebang(path: str) -> List[str]:
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return []
    if not head.startswith(b"#!"):
        return []
    return head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()


def prepare(layer: str, bashes: Sequence[str], memo_dir: Optional[str] = None) -> List[Verdict]:
    """Check the library in LAYER (the directory of gwtrace-auto.sh) for each of BASHES, and leave
    a verified copy for each one that passes. Never raises: a problem is a refusal."""
    so = os.path.join(layer, SO_NAME)
    if not os.path.isfile(so):
        return []
    try:
        with open(so, "rb") as f:
            library = f.read()
    except OSError as exc:
        return [Verdict(bash, False, f"cannot read {so}: {exc.strerror}") for bash in bashes]
    want = shell_stamp(layer)
    if want is None:
        return [Verdict(bash, False, "the shell files name no library stamp") for bash in bashes]
    out = os.path.join(layer, VERIFIED_DIR)
    memo_dirs = [os.path.join(out, "verdicts")] + ([memo_dir] if memo_dir else [_user_memo_dir()])
    verdicts: List[Verdict] = []
    remembered: Dict[Tuple[int, ...], Tuple[bool, str, str]] = {}
    for bash in bashes:
        try:
            st = os.stat(bash)
        except OSError as exc:
            verdicts.append(Verdict(bash, False, f"cannot stat: {exc.strerror}"))
            continue
        identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        if _fresh_copy(out, want, bash, st, library):
            verdicts.append(Verdict(bash, True, cached=True))
            continue
        key = hashlib.sha256(repr((hashlib.sha256(library).hexdigest(), want, bash, identity)).encode()).hexdigest()[:24]
        cached = True
        result = remembered.get(identity) or _recall(memo_dirs, key)
        if result is None:
            cached = False
            result = check(bash, library, layer, want)
            if result[1] != "timeout":
                _remember(memo_dirs, key, result)
        remembered[identity] = result
        ok, reason, version = result
        if ok and not _materialize(out, want, version, bash, st, library):
            ok, reason = False, f"cannot write {out}"
        if not ok:
            _discard(out, want, bash)
        verdicts.append(Verdict(bash, ok, reason, cached))
    return verdicts


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
    if not _materialize(os.path.join(staged, VERIFIED_DIR), stamp, version, bash, os.stat(bash), library):
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
        runs[accel] = (rc, stdout, stderr, normalized_events(_read(os.path.join(events, "events.log"))))
    if runs["1"] != runs["0"]:
        return False, "the canary's events differ from the shell code's: " + _first_difference(runs["1"], runs["0"])
    for level in ("functions", "scripts"):
        counts = _read(os.path.join(tmp, f"count-{level}")).split()
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


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _fresh_copy(out: str, stamp: str, bash: str, st: os.stat_result, library: bytes) -> bool:
    """A copy for BASH is there, with its mtime and the library's current bytes."""
    for path in _copies(out, stamp, bash):
        try:
            if os.stat(path).st_mtime_ns == st.st_mtime_ns:
                with open(path, "rb") as f:
                    if f.read() == library:
                        return True
        except OSError:
            pass
    return False


def _copies(out: str, stamp: str, bash: str) -> List[str]:
    """The copies in OUT for BASH, whatever BASH_VERSION they were named with (it holds no %)."""
    pattern = re.compile(re.escape(f"{stamp}_") + "[^%]*" + re.escape(bash.replace("/", "%") + ".so"))
    try:
        names = os.listdir(out)
    except OSError:
        return []
    return [os.path.join(out, name) for name in names if pattern.fullmatch(name)]


def _materialize(out: str, stamp: str, version: str, bash: str, st: os.stat_result, library: bytes) -> bool:
    """Write the verified copy for BASH (atomically: a traced script never loads half a file)."""
    if not version:
        return False
    _discard(out, stamp, bash)
    try:
        os.makedirs(out, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=out, prefix=".copy.")
        with os.fdopen(fd, "wb") as f:
            f.write(library)
        os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
        os.replace(tmp, os.path.join(out, verified_name(stamp, version, bash)))
        return True
    except OSError:
        return False


def _discard(out: str, stamp: str, bash: str) -> None:
    """Remove the copies for BASH (another library, another bash at that path)."""
    for path in _copies(out, stamp, bash):
        try:
            os.unlink(path)
        except OSError:
            pass


def _user_memo_dir() -> str:
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "gwtrace", "accel")


def _recall(dirs: Sequence[str], key: str) -> Optional[Tuple[bool, str, str]]:
    for directory in dirs:
        text = _read(os.path.join(directory, key))
        lines = text.split("\n")
        if len(lines) >= 2 and lines[0] in ("ok", "refused"):
            return lines[0] == "ok", lines[1], lines[2] if len(lines) > 2 else ""
    return None


def _remember(dirs: Sequence[str], key: str, result: Tuple[bool, str, str]) -> None:
    ok, reason, version = result
    text = f"{'ok' if ok else 'refused'}\n{reason}\n{version}\n"
    for directory in dirs:
        try:
            os.makedirs(directory, mode=0o700, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=".verdict.")
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, os.path.join(directory, key))
        except OSError:
            pass


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m gwtrace.shim.accel [--layer DIR] [BASH...]``: check the library for these bash
    binaries (default: the PATH's bash, /bin/bash, /usr/bin/bash) and print one line each."""
    args = list(sys.argv[1:] if argv is None else argv)
    layer = None
    if args[:1] == ["--layer"] and len(args) > 1:
        layer, args = args[1], args[2:]
    if any(a.startswith("-") for a in args):
        print("usage: python -m gwtrace.shim.accel [--layer DIR] [BASH...]", file=sys.stderr)
        return 2
    if layer is None:
        from gwtrace import bashlib

        layer = bashlib.HERE
    if not os.path.isfile(os.path.join(layer, SO_NAME)):
        print(f"gwtrace accel: no {SO_NAME} in {layer} (`make accel`): the shell code does the work", file=sys.stderr)
        return 1
    bashes = [os.path.abspath(b if "/" in b else shutil.which(b) or b) for b in args] \
        or candidate_bashes([], os.environ)
    started = time.monotonic()
    verdicts = prepare(layer, bashes)
    for verdict in verdicts:
        print(verdict.line())
    print(f"({time.monotonic() - started:.2f} s)", file=sys.stderr)
    return 0 if verdicts and all(v.ok for v in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
