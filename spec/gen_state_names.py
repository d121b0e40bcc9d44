#!/usr/bin/env python3
"""Write bash/accel/state_names.h from spec/accel-state.json (`make spec`).

Why: the accelerator's C code looks up gwtrace's shell variables by name. With
the names in one generated header, each name has one readable macro
(``GW_V_ID_COUNTER`` for ``_gwtrace_actr``) and its meaning beside it, and the
description stays the one place a name is added, renamed or explained.
tests/test_spec.py checks that running this again gives the committed header.

    python3 spec/gen_state_names.py            # write the header
    python3 spec/gen_state_names.py --check    # exit 1 if the header is stale
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict, List

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "spec" / "accel-state.json"
HEADER = ROOT / "bash" / "accel" / "state_names.h"


def _comment(text: str) -> str:
    """One C comment line; ``*/`` cannot end it early."""
    return "/* " + text.replace("*/", "* /") + " */"


def _define(macro: str, value: str, width: int = 26) -> str:
    return f"#define {macro.ljust(width)} {json.dumps(value)}"


def render(spec: Dict[str, Any]) -> str:
    """The header's text for the description ``spec``."""
    stamp = spec["stamp"]
    out: List[str] = [
        "/* state_names.h: the names the accelerator shares with the shell code. GENERATED from",
        " * spec/accel-state.json by spec/gen_state_names.py (`make spec`): edit the description, not this.",
        " * Licence: GPL-3.0-or-later, as bash (functions.c says why).",
        " */",
        "#ifndef GWTRACE_STATE_NAMES_H",
        "#define GWTRACE_STATE_NAMES_H",
        "",
        _comment(stamp["meaning"]),
        f"#ifndef {stamp['macro']}",
        _define(stamp["macro"], stamp["value"], 0),
        "#endif",
    ]
    for kind, title in spec["kinds"].items():
        rows = [row for row in spec["names"] if row["kind"] == kind]
        out += ["", _comment(f"{kind}: {title}")]
        for row in rows:
            owner = f"{row['type']}; written by {', '.join(row['written_by'])}, read by {', '.join(row['read_by'])}"
            out += [_comment(f"{row['meaning']} ({owner})"), _define(row["macro"], row["name"])]
    for section in ("prefixes", "files"):
        out += ["", _comment(section)]
        for row in spec[section]:
            out += [_comment(row["meaning"]), _define(row["macro"], row["value"])]
    out += ["", "#endif", ""]
    return "\n".join(out)


def main(argv: List[str]) -> int:
    text = render(json.loads(SPEC.read_text(encoding="utf-8")))
    if argv[1:] == ["--check"]:
        if HEADER.read_text(encoding="utf-8") != text:
            print(f"{HEADER.relative_to(ROOT)} is stale: run `make spec`", file=sys.stderr)
            return 1
        return 0
    if argv[1:]:
        print("usage: gen_state_names.py [--check]", file=sys.stderr)
        return 2
    HEADER.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
