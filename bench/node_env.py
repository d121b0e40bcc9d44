"""PATH as a worker node has it, for the benchmarks that run a real glidein (bench/glidein,
bench/glidein-deployed): on a development machine with pyenv, ``python3`` is a shim (a bash
script running two more), which a worker node does not have and which would be measured as
the glidein's or the set-up's own cost."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path


def node_path(path: str) -> str:
    """PATH as on a worker node, where ``python3`` is a program: pyenv's shims left out (each is a bash
    script running two more, ``pyenv`` and ``pyenv-exec``: on a development machine with pyenv they are
    ~40 of a glidein's ~180 bash processes, every one traced; a worker node has none). If no python3 is
    left, the directory of this interpreter's own program goes first. PYENV_SHIMS=keep: PATH as it is."""
    if os.environ.get("PYENV_SHIMS") == "keep":
        return path
    kept = [d for d in path.split(os.pathsep) if d and not d.rstrip("/").endswith("/.pyenv/shims")]
    if not shutil.which("python3", path=os.pathsep.join(kept)):
        kept.insert(0, str(Path(os.path.realpath(sys.executable)).parent))
    return os.pathsep.join(kept)
