"""docs/design.md's module map and layers table, read against the packages on disk.

Every path the tables name exists, and every package (and top-level module) of
``sidecar/gwtrace`` is named in both: a package that is added, moved or removed
without its line in the design fails here, with the name to add or drop.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import List, Tuple

from conftest import REPO

SOURCE = REPO / "sidecar" / "gwtrace"
DESIGN = REPO / "docs" / "design.md"


def table_after(text: str, heading: str, column: int) -> List[str]:
    """The cells in ``column`` of the markdown table that follows ``heading``."""
    lines = text[text.index(heading):].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    cells = []
    for line in lines[start + 2:]:           # past the header and its |---| line
        if not line.startswith("|"):
            break
        cells.append(line.split(" | ")[column].lstrip("| "))
    return cells


def named(cell: str) -> List[str]:
    """The paths a cell names: ``a/b.py``, ``c.py`` (after ``a/b.py``: in a/), ``pkg/``, ``home.py``."""
    out: List[str] = []
    for token in re.findall(r"`([^`]+)`", cell):
        if not re.fullmatch(r"[\w./*-]+", token) or not ("/" in token or token.endswith(".py")):
            continue                         # not a path: a name such as gwtrace.bashlib
        if "/" not in token and out and "/" in out[-1].rstrip("/"):
            token = out[-1].rsplit("/", 1)[0] + "/" + token
        out.append(token)
    return out


def units(source: Path) -> List[str]:
    """The packages (``name/``) and top-level modules (``name.py``) of the source root."""
    found = [f"{p.parent.name}/" for p in sorted(source.glob("*/__init__.py"))]
    found += [p.name for p in sorted(source.glob("*.py")) if p.name != "__init__.py"]
    return found


def problems(text: str, source: Path, repo: Path) -> Tuple[List[str], List[str]]:
    """(paths a table names that do not exist, packages or modules a table does not name)."""
    missing, unnamed = [], []
    for heading, column in (("Module map", 0), ("| layer | packages |", 1)):
        paths = [(path, cell) for cell in table_after(text, heading, column) for path in named(cell)]
        for path, cell in paths:
            base = repo if path.startswith("bash/") or "(top level)" in cell else source
            if not list(base.glob(path.rstrip("/"))):
                missing.append(f"{heading}: {path}")
        for unit in units(source):
            if not any(path == unit or path.startswith(unit) for path, _ in paths):
                unnamed.append(f"{heading}: {unit}")
    return missing, unnamed


def test_the_module_map_and_the_layers_name_every_package_and_nothing_else() -> None:
    assert problems(DESIGN.read_text(), SOURCE, REPO) == ([], [])


def test_the_check_finds_a_missing_and_an_unnamed_package(tmp_path: Path) -> None:
    """The check itself works: a package on disk the tables omit, and a path they name that is gone."""
    source = tmp_path / "gwtrace"
    for package in ("wire", "store"):
        (source / package).mkdir(parents=True)
        (source / package / "__init__.py").write_text("")
    (source / "wire" / "events.py").write_text("")
    (source / "home.py").write_text("")
    text = ("Module map:\n\n| module | job |\n|---|---|\n| `wire/events.py`, `gone.py` | x |\n| `home.py` | y |\n\n"
            "| layer | packages | may import |\n|---|---|---|\n| bottom | `wire/` \\| `home.py` | nothing |\n")
    assert problems(text, source, tmp_path) == (
        ["Module map: wire/gone.py"], ["Module map: store/", "| layer | packages |: store/"])
