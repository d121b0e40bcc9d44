"""The accounting series as a picture, drawn by matplotlib.

A kept plotting library rather than hand-written SVG: stacking, time axes,
legends and both SVG and PNG come with it.  It is a factory-side dependency
(the ``[factory]`` extra), imported only when a picture is asked for.
"""

from __future__ import annotations

from collections import defaultdict
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any, Dict, Iterator, List

from .canonical import CATEGORIES

#: one colour per category, the same in every picture (good to bad, then overhead).
COLOURS = {"goodput": "#2e7d32", "overhead": "#9e9e9e", "validation_fail": "#c62828", "decision_problem": "#ef6c00",
           "misconfig_badput": "#6a1b9a", "preemption_badput": "#1565c0"}
ORDER = ("goodput", "overhead", "preemption_badput", "misconfig_badput", "decision_problem", "validation_fail")


#: Longest label drawn (a site or entry name from a node could be any length); the rest is elided.
MAX_LABEL_CHARS = 60


def label(text: Any) -> str:
    """Text from a worker node as a chart label: printable, at most MAX_LABEL_CHARS (what is cut ends in …)."""
    clean = "".join(c if c.isprintable() else "?" for c in str(text)[:MAX_LABEL_CHARS + 1])
    clean = clean if len(clean) <= MAX_LABEL_CHARS else clean[:MAX_LABEL_CHARS - 1] + "…"
    import matplotlib

    if "text.parse_math" not in matplotlib.rcParams:    # an old matplotlib: escape what mathtext would read
        clean = clean.replace("$", "\\$")
    return clean


@contextmanager
def plain_text() -> Iterator[None]:
    """Every text drawn in the block is plain text: no mathtext (``$...$``) and no TeX.

    Why: site, entry and script names come from worker nodes. Parsed as mathtext, ``$\\foo$`` made every
    chart an error, 60 nested ``\\sqrt{`` a RecursionError and ``$xxxx...$`` 23 s of CPU. Text artists
    read these settings when they are made, and tick labels are made while the figure is saved, so the
    whole drawing, saving included, runs inside.
    """
    plt = pyplot()
    with plt.rc_context({key: False for key in ("text.usetex", "text.parse_math") if key in plt.rcParams}):
        yield


def pyplot() -> Any:
    """matplotlib's pyplot on a file-only backend; ValueError, in one line, when matplotlib is not installed."""
    try:
        import matplotlib
    except ImportError:
        raise ValueError("--plot needs matplotlib, which this installation lacks: pip install 'gwtrace[factory]'") from None
    matplotlib.use("Agg")  # no display on a factory host
    import matplotlib.pyplot as plt

    return plt


def stacked_area(rows: List[Dict[str, Any]], path: str, title: str, width: int = 3600) -> None:
    """Write ``rows`` (``rows_of`` output: canonical hours per ``width``-second bucket) summed over groups."""
    if not path.endswith((".svg", ".png")):
        raise ValueError(f"--plot writes .svg or .png files: {path}")
    plt = pyplot()
    with plain_text():
        _stacked_area(plt, rows, path, label(title) if len(title) > 200 else title, width)


def _stacked_area(plt: Any, rows: List[Dict[str, Any]], path: str, title: str, width: int) -> None:
    per_bucket: Dict[int, Dict[str, float]] = defaultdict(lambda: dict.fromkeys(CATEGORIES, 0.0))
    for row in rows:
        for cat in CATEGORIES:
            per_bucket[row["bucket_start"]][cat] += row[cat]
    starts = sorted(per_bucket)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    try:
        if starts:
            # each bucket is drawn over its whole width: its values again at its end
            edges = starts + [starts[-1] + width]
            times = [datetime.fromtimestamp(s, tz=timezone.utc) for s in edges]
            ax.stackplot(times, [[per_bucket[s][c] for s in starts] + [per_bucket[starts[-1]][c]] for c in ORDER],
                         labels=[c.replace("_", " ") for c in ORDER], colors=[COLOURS[c] for c in ORDER],
                         step="post")
        else:
            ax.text(0.5, 0.5, "no glidein time in this period", ha="center", va="center", transform=ax.transAxes)
        ax.set_title(title)
        ax.set_ylabel("canonical hours (1 core + 2 GB)")
        ax.legend(loc="upper left", fontsize="small", ncol=3)
        fig.autofmt_xdate()
        fig.tight_layout()
        fig.savefig(path, metadata={"Date": None} if path.endswith(".svg") else None)
    finally:
        plt.close(fig)
