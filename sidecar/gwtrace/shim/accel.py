"""The accelerator's load check: a bash binary gets ``gwtrace-accel.so`` only after a child of it
has shown that the library reads that bash's structures right and changes nothing in a trace.

Why: the accelerator (``bash/accel/``, docs/shim.md "The accelerator") declares bash's structures
by hand. A distribution's bash with another layout would have it free() a foreign pointer or write
into a readonly variable (abort, segfault), and a symbol that bash lacks would end the traced
script with "symbol lookup error" (exit 127): every traced script on that node would die. So the
library is never ``enable -f``-ed in a traced script until a check has passed for that bash
binary, in children that can crash without harm: a probe of what the library reads and writes,
and a canary workload compared with the shell code's (accel_check.py).

A passing pair is *materialized*: the library's bytes, as checked, copied to
``<layer>/gwtrace-accel.d/<stamp>_<BASH_VERSION><$BASH with / as %>.so`` with the bash binary's
mtime. gwtrace-auto.sh loads only that file, and only when its mtime is the one of ``$BASH``
(``! -nt`` and ``! -ot``: four stat calls, no fork): a bash replaced, or another one at the same
path (a container's), or shell files written for another stamp find no copy, run the shell code
and say so on their script span (``gwtrace.accel=unverified``, counted by the sidecar as
``bash_accel_unverified``). Verdicts are kept per (library, stamp, bash path, device, inode, size,
mtime) in ``<layer>/gwtrace-accel.d/verdicts/`` (the reason of a refusal is there) and in the
per-user cache, so the children run once per bash binary and library, not once per ``gwtrace run``.

Here: which bash binaries to check, and the verdicts kept; the children are in accel_check.py,
the copies' names and writing in accel_copies.py. Node-side code: standard library only, Python 3.9.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from gwtrace.shim.accel_check import check, normalized_events, read_text
from gwtrace.shim.accel_copies import SO_NAME, VERIFIED_DIR, discard, fresh_copy, materialize, verified_name

__all__ = ["SO_NAME", "VERIFIED_DIR", "Verdict", "candidate_bashes", "check", "main", "normalized_events",
           "prepare", "shell_stamp", "verified_name"]

#: The stamp the shell files were written for, as gwtrace-auto.sh names the copy it loads.
_SHELL_STAMP = re.compile(r"gwtrace-accel\.d/(\w+)_\$BASH_VERSION")
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
    memo_dirs = [os.path.join(out, "verdicts")] + [d for d in [memo_dir or _user_memo_dir()] if os.path.isabs(d)]
    digest = hashlib.sha256(library).hexdigest()
    verdicts: List[Verdict] = []
    remembered: Dict[Tuple[int, ...], Tuple[bool, str, str]] = {}
    for bash in bashes:
        try:
            st = os.stat(bash)
        except OSError as exc:
            verdicts.append(Verdict(bash, False, f"cannot stat: {exc.strerror}"))
            continue
        identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        if fresh_copy(out, want, bash, st, library):
            verdicts.append(Verdict(bash, True, cached=True))
            continue
        key = hashlib.sha256(repr((digest, want, bash, identity)).encode()).hexdigest()[:24]
        cached = True
        result = remembered.get(identity) or _recall(memo_dirs, key)
        if result is None:
            cached = False
            try:
                result = check(bash, library, layer, want)
            except OSError as exc:       # no room for the check's files: not the pair's fault
                result = (False, f"cannot run the check: {exc.strerror or exc}", "")
            if result[1] != "timeout" and result[2]:
                _remember(memo_dirs, key, result)
        remembered[identity] = result
        ok, reason, version = result
        if ok and not materialize(out, want, version, bash, st, library):
            ok, reason = False, f"cannot write {out}"
        if not ok:
            discard(out, want, bash)
        verdicts.append(Verdict(bash, ok, reason, cached))
    return verdicts


def _user_memo_dir() -> str:
    """The per-user cache (relative, and so not used, when there is no home to find)."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "gwtrace", "accel")


def _recall(dirs: Sequence[str], key: str) -> Optional[Tuple[bool, str, str]]:
    for directory in dirs:
        text = read_text(os.path.join(directory, key))
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
        # start-up cost: `gwtrace run` imports only what it uses before it runs CMD
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
