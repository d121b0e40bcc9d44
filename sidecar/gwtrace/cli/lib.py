"""``gwtrace lib [--auto [--dir DIR]]``: where the bash library is, for ``source "$(gwtrace lib)"``."""

from __future__ import annotations

import argparse
import os
import sys
from typing import List

from gwtrace.cli import COMMANDS


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gwtrace lib", description=COMMANDS["lib"])
    p.add_argument("--auto", action="store_true",
                   help="the auto layer's gwtrace-auto.sh instead (BASH_ENV; docs/shim.md), copied with the "
                        "files it loads into --dir when this gwtrace runs from a .pyz; the accelerator is "
                        "checked for PATH's bash first (docs/shim.md, the load check)")
    p.add_argument("--dir", help="where a .pyz copies the files (default: a per-user cache)")
    return p


def main(argv: List[str]) -> int:
    args = build_parser().parse_args(argv)
    if not args.auto:
        from gwtrace import bashlib

        # a file bash can source: bash/gwtrace.sh in a checkout; extracted from a .pyz (bashlib.real_path)
        print(bashlib.real_path(["gwtrace.sh"]))
        return 0
    from gwtrace.shim.run import auto_lib_path, check_accelerator

    path = auto_lib_path(args.dir)
    if path is None:
        print("gwtrace: the auto layer is not in this gwtrace; give --dir to copy it out of a .pyz", file=sys.stderr)
        return 1
    check_accelerator(os.path.dirname(path), ["bash"], dict(os.environ))   # for the bash that will source it
    print(path)
    return 0
