"""The accelerator's verified copies: where the load check leaves a library it passed, and how
gwtrace-auto.sh finds it.

A copy is named ``<stamp>_<BASH_VERSION><$BASH with / as %>.so`` (``verified_name``) in
``gwtrace-accel.d/`` beside gwtrace-auto.sh, and carries the bash binary's mtime: the shell
loads it only when ``! -nt`` and ``! -ot`` hold against ``$BASH``. Written atomically (a traced
script never loads half a file), removed when its pair is refused (gwtrace/shim/accel.py).
"""

from __future__ import annotations

import os
import re
import tempfile
from typing import List

SO_NAME = "gwtrace-accel.so"
#: Beside gwtrace-auto.sh: the verified copies, and the verdicts.
VERIFIED_DIR = "gwtrace-accel.d"


def verified_name(stamp: str, bash_version: str, bash_path: str) -> str:
    """The copy's name, as gwtrace-auto.sh spells it: ``STAMP_$BASH_VERSION${BASH//\\//%}.so``."""
    return f"{stamp}_{bash_version}{bash_path.replace('/', '%')}.so"


def fresh_copy(out: str, stamp: str, bash: str, st: os.stat_result, library: bytes) -> bool:
    """A copy for BASH is there, with its mtime and the library's current bytes."""
    for path in copies(out, stamp, bash):
        try:
            if os.stat(path).st_mtime_ns == st.st_mtime_ns:
                with open(path, "rb") as f:
                    if f.read() == library:
                        return True
        except OSError:
            pass
    return False


def copies(out: str, stamp: str, bash: str) -> List[str]:
    """The copies in OUT for BASH, whatever BASH_VERSION they were named with (it holds no %)."""
    pattern = re.compile(re.escape(f"{stamp}_") + "[^%]*" + re.escape(bash.replace("/", "%") + ".so"))
    try:
        names = os.listdir(out)
    except OSError:
        return []
    return [os.path.join(out, name) for name in names if pattern.fullmatch(name)]


def materialize(out: str, stamp: str, version: str, bash: str, st: os.stat_result, library: bytes) -> bool:
    """Write the verified copy for BASH (atomically: a traced script never loads half a file)."""
    if not version:
        return False
    discard(out, stamp, bash)
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


def discard(out: str, stamp: str, bash: str) -> None:
    """Remove the copies for BASH (another library, another bash at that path)."""
    for path in copies(out, stamp, bash):
        try:
            os.unlink(path)
        except OSError:
            pass
