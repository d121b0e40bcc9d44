"""``gwtrace analyze --plot DIR``: the analysis as pictures, drawn by matplotlib.

Three charts, SVG (or PNG with ``--plot-format png``): where glidein time goes
per entry (stacked bars of canonical hours per phase), the distribution of
each phase's length (histograms on a log scale), and each site's failure rate
per day. The same library and rules as ``gwtrace account --plot``
(``factory/account_plot.py``): imported only when asked, one clear line
without it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Dict, List, Sequence

from gwtrace.factory.account_plot import _pyplot
from .stats import ORDER, QUEUED

COLOURS = ("#2e7d32", "#9e9e9e", "#1565c0", "#ef6c00", "#6a1b9a", "#c62828", "#00838f", "#8d6e63", "#455a64",
           "#f9a825", "#ad1457")


def plot_all(lengths: Dict[str, Sequence[float]], report: Dict[str, Any], directory: str,
             fmt: str = "svg") -> List[str]:
    """Write the three charts into ``directory`` (created if needed); return their paths.

    ``lengths``: each phase kind's seconds per glidein (``stats.PhaseCells.lengths``).
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    plt = _pyplot()
    paths = [_phase_bars(plt, report["phases"], out / f"phases_by_group.{fmt}"),
             _histograms(plt, lengths, out / f"phase_lengths.{fmt}"),
             _failure_rates(plt, report["trends"], out / f"failure_rate_by_site.{fmt}")]
    return [str(p) for p in paths]


def _phase_bars(plt: Any, rows: List[Dict[str, Any]], path: Path) -> Path:
    group_key = next((k for k in ("entry", "site") if rows and k in rows[0]), "entry")
    groups = sorted({r[group_key] for r in rows})
    kinds = [k for k in ORDER if k not in QUEUED and any(r["phase"] == k for r in rows)]
    hours = {(r[group_key], r["phase"]): r["canonical_hours"] or 0.0 for r in rows}
    fig, ax = plt.subplots(figsize=(10, 0.4 * len(groups) + 2))
    try:
        left = [0.0] * len(groups)
        for colour, kind in zip(COLOURS, kinds):
            values = [hours.get((g, kind), 0.0) for g in groups]
            ax.barh(groups, values, left=left, label=kind.replace("_", " "), color=colour)
            left = [a + b for a, b in zip(left, values)]
        ax.set_xlabel("canonical hours")
        ax.set_title(f"where glidein time goes, per {group_key}")
        ax.legend(fontsize="small", ncol=4, loc="lower right")
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
    return path


def _histograms(plt: Any, seconds: Dict[str, Sequence[float]], path: Path) -> Path:
    lengths = {kind: [max(v, 1.0) for v in values] for kind, values in seconds.items()}
    kinds = [k for k in ORDER if lengths.get(k)]
    cols = 3
    rows = max(1, math.ceil(len(kinds) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(12, 2.6 * rows), squeeze=False)
    try:
        for ax, kind in zip([a for row in axes for a in row], kinds):
            values = lengths[kind]
            bins = [10 ** (x / 4) for x in range(0, int(4 * math.log10(max(values))) + 2)]
            ax.hist(values, bins=bins, color="#1565c0")
            ax.set_xscale("log")
            ax.set_title(f"{kind.replace('_', ' ')} (n={len(values)})", fontsize="small")
            ax.set_xlabel("seconds", fontsize="small")
        for ax in [a for row in axes for a in row][len(kinds):]:
            ax.axis("off")
        fig.suptitle("length of each phase per glidein")
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
    return path


def _failure_rates(plt: Any, trend_rows: List[Dict[str, Any]], path: Path) -> Path:
    from datetime import datetime, timezone

    fig, ax = plt.subplots(figsize=(10, 4))
    try:
        for colour, site in zip(COLOURS * 4, trend_rows):
            days = [datetime.fromtimestamp(d["day"], tz=timezone.utc) for d in site["days"]]
            ax.plot(days, [100 * d["failure_rate"] for d in site["days"]], marker="o", color=colour,
                    label=site["site"] + (" (worse)" if site["worse"] else ""))
        ax.set_ylabel("failed glideins, %")
        ax.set_title("failure rate per site and day")
        if trend_rows:
            ax.legend(fontsize="small", ncol=4)
        fig.autofmt_xdate()
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
    return path
